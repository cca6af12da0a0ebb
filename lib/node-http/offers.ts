/**
 * Where other nodes offer TLS, per address (`ip:apiPort`), for every link this node opens to another node:
 * the peer websocket (plugins/peers/ws-transport.ts) and the node-to-node HTTP calls (./request.ts).
 *
 * A node learns it two ways: a peer's `hello` names the port it serves HTTPS on (the peers plugin tells
 * this memory), and a node that serves HTTPS only on its API port answers a plain request by closing the
 * connection (the caller then tries TLS on the same port, and remembers when that works).
 *
 * One memory per process, shared by the plugins that call other nodes: what the peer network learned from
 * a hello serves the node plugin's checks of that node too. What a remote address offers is the same
 * whichever local caller asks.
 */

/** How many addresses are remembered (the oldest is forgotten first); a node has about 50 links. */
const MAX_ADDRESSES = 10_000;
/** After TLS failed where it was offered and plain worked, plain goes first this long. */
const TLS_BROKEN_MS = 10 * 60_000;

interface Offer {
  /** The port the node serves HTTPS on (its API port when it serves HTTPS only); 0: none known. */
  tls: number;
  /** TLS failed where offered and plain worked: plain first until then. */
  brokenUntil: number;
}

/** One way to reach a node: TLS or plain, on a port. */
export interface Attempt {
  secure: boolean;
  port: number;
  /** Tried only when the previous attempt failed the way a TLS-only server fails a plain request. */
  onlyAfterTlsRefusal?: boolean;
}

export class TlsOffers {
  private readonly map = new Map<string, Offer>();

  constructor(
    private readonly now: () => number = () => Date.now(),
    private readonly max = MAX_ADDRESSES,
  ) {}

  /** The node at `ip:port` serves HTTPS on `tls` (0: it said it serves none). */
  offer(ip: string, port: number, tls: number): void {
    const key = addressKey(ip, port);
    const old = this.map.get(key);
    if (!validPort(tls)) tls = 0;
    this.map.delete(key);
    this.map.set(key, { tls, brokenUntil: old?.tls === tls ? old.brokenUntil : 0 });
    while (this.map.size > this.max) this.map.delete(this.map.keys().next().value!);
  }

  /** The HTTPS port known for `ip:port`, 0 when none. */
  tlsPort(ip: string, port: number): number {
    return this.map.get(addressKey(ip, port))?.tls ?? 0;
  }

  /**
   * The attempts for a link to `ip:port`, in order: HTTPS where the node offers it, then plain; for an
   * address offering nothing known, plain, then TLS on the same port if the plain attempt met a TLS server.
   */
  plan(ip: string, port: number): Attempt[] {
    const o = this.map.get(addressKey(ip, port));
    if (o?.tls && o.brokenUntil <= this.now()) return [{ secure: true, port: o.tls }, { secure: false, port }];
    return [{ secure: false, port }, { secure: true, port, onlyAfterTlsRefusal: true }];
  }

  /**
   * Run `attempt` along the plan for `ip:port` until one works, and remember what did. An attempt rejects
   * only when no answer came (an HTTP answer of any status, or a websocket refused with one, resolves or
   * carries `answered: true`: the node was reached, so no other way is tried). A TLS attempt that fails
   * falls back to plain; a plain one falls back to TLS only when it met a TLS server.
   */
  async reach<T>(ip: string, port: number, attempt: (a: Attempt) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const plan = this.plan(ip, port);
    let last: unknown;
    let tlsFailed = false;
    for (const [i, a] of plan.entries()) {
      if (a.onlyAfterTlsRefusal && !(i > 0 && metTls(last))) break;
      try {
        const r = await attempt(a);
        this.worked(ip, port, a, tlsFailed);
        return r;
      } catch (e) {
        last = e;
        if (signal?.aborted || (e as { answered?: boolean })?.answered) throw e;
        if (a.secure) tlsFailed = true;
      }
    }
    throw last;
  }

  /** Record what worked: a TLS attempt that worked is remembered; plain that worked after TLS failed marks TLS broken. */
  worked(ip: string, port: number, a: Attempt, tlsFailed: boolean): void {
    if (a.secure) {
      const o = this.map.get(addressKey(ip, port));
      if (!o || o.tls !== a.port) this.offer(ip, port, a.port);
      else o.brokenUntil = 0;
      return;
    }
    const o = this.map.get(addressKey(ip, port));
    if (tlsFailed && o?.tls) o.brokenUntil = this.now() + TLS_BROKEN_MS;
  }

  get size(): number {
    return this.map.size;
  }
}

const validPort = (p: unknown): p is number => Number.isInteger(p) && (p as number) > 0 && (p as number) <= 65535;

function addressKey(ip: string, port: number): string {
  return `${ip.replace(/^\[|\]$/g, '').replace(/^::ffff:/, '')}:${port}`;
}

/** The host part of a URL for `ip`: IPv6 in brackets. */
export function urlHost(ip: string): string {
  const bare = ip.replace(/^\[|\]$/g, '');
  return bare.includes(':') ? `[${bare}]` : bare;
}

/**
 * A plain request that met a TLS-only server: Node's HTTPS server closes the connection on the clear-text
 * request (ECONNRESET, "socket hang up", measured); a server that sends a TLS alert instead makes the HTTP
 * parser fail (HPE_*); EPROTO is the TLS layer's own refusal.
 */
export function metTls(e: unknown): boolean {
  const code = String((e as { code?: unknown })?.code ?? '');
  return code === 'ECONNRESET' || code === 'EPROTO' || code.startsWith('HPE_') || /socket hang up/.test(String((e as Error)?.message));
}

/** This process's memory (see the file's comment). */
export const tlsOffers = new TlsOffers();
