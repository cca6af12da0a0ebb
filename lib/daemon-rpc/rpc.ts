/**
 * JSON-RPC 1.0/2.0 over HTTP with basic auth: the transport to the blockchain and benchmark daemons.
 * node:http with a keep-alive agent, not fetch: measured against litecoind with 5 calls in flight, fetch
 * made 1,041 calls/s and node:http with keep-alive 6,592. Each call has one deadline that covers its wait
 * for a slot too; at most `concurrency` calls run at once, so a slow daemon cannot pile up sockets.
 */
import http from 'node:http';
import https from 'node:https';
import { deadline } from './deadline.ts';

export interface RpcClientOptions {
  url: string;
  user?: string;
  password?: string;
  /** Per-call timeout (default 40 s: a tip-list call can take ~14 s on a large node). */
  timeoutMs?: number;
  /** Calls in flight at once (default 5). */
  concurrency?: number;
  /** Named in errors: 'daemon', 'benchmark daemon'. */
  name?: string;
}

export type RpcErrorKind = 'rpc' | 'unreachable' | 'timeout' | 'protocol';

export class RpcError extends Error {
  constructor(
    readonly kind: RpcErrorKind,
    readonly code: number | string,
    message: string,
  ) {
    super(message);
    this.name = kind === 'rpc' ? 'RpcError' : kind === 'unreachable' ? 'DaemonUnreachable' : kind === 'timeout' ? 'DaemonTimeout' : 'DaemonProtocolError';
  }
}

export interface RpcCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /**
   * Ask on a connection of its own, reset once the answer is in (so no socket is left in TIME_WAIT), rather
   * than a kept-alive one: for answers of more than FIRST_WRITE bytes from a daemon on this machine. The
   * daemon's HTTP server (libevent) writes an answer 16 KB at a time and leaves Nagle's algorithm on; on
   * loopback a segment holds 64 KB, so after the first write the rest waits for our ACK, which Linux
   * delays by 40 ms on a connection it sees as request/response (new connections start with immediate
   * ACKs). Measured against litecoind (`npm run bench:rpc-answers`, figures in lib/daemon-rpc/README.md):
   * `getblock` answers of 25-59 KB took 42 ms on a kept-alive connection and 2.0-3.1 ms on their own, and
   * an own connection costs a small answer 0.3-0.5 ms more.
   * Left out, the client decides: a method more than a quarter of whose recent answers were larger than
   * FIRST_WRITE (OWN_FROM_SHARE) goes on connections of its own; and a kept-alive answer whose headers
   * announce more than FIRST_WRITE is abandoned at once and asked again on a connection of its own (the
   * daemon's work on it twice instead of 40 ms waiting).
   * Only over http to a loopback address: elsewhere segments are smaller than the daemon's writes, and a
   * new connection costs a round trip (and a TLS handshake over https).
   */
  ownConnection?: boolean;
}

export interface RpcClient {
  call<T = unknown>(method: string, params?: unknown[], opts?: RpcCallOptions): Promise<T>;
  /** Several calls in one HTTP request; each result or RpcError in call order. */
  batch(calls: { method: string; params?: unknown[] }[], opts?: RpcCallOptions): Promise<(unknown | RpcError)[]>;
  readonly inFlight: number;
  readonly options: Readonly<RpcClientOptions>;
}

/** A client its creator owns: it can drop the kept-alive sockets (a disposed plugin, a changed endpoint). */
export interface RpcConnection extends RpcClient {
  close(): void;
  /** Calls that went on a connection of their own so far (see RpcCallOptions.ownConnection). */
  readonly ownConnectionsOpened: number;
  /** Drop the kept-alive sockets no call uses now (a stopping daemon waits for them to close). */
  closeIdle(): void;
}

const IDLE_MS = 2000;

/**
 * What litecoind's HTTP server (libevent) sends of an answer, headers included, before it waits for our
 * ACK: answers up to this size never wait (measured with `echo`: 16,347 bytes 1.6 ms, 16,387 bytes 43.8 ms
 * on a kept-alive connection), so they stay on kept-alive connections.
 */
export const FIRST_WRITE = 16 * 1024;
/**
 * A method goes on connections of its own while more than this share of its recent answers (a moving
 * average, each answer weighing 1/8) were larger than FIRST_WRITE; below it a large answer is asked twice.
 * About the break-even of the two costs measured here: a connection of its own costs the node 0.25-0.4 ms of
 * CPU a call; a second asking costs the daemon its JSON of the block again (0.8 ms of litecoind's CPU for a
 * 15 KB answer, more for larger ones) and the node a reset connection and a new one (README.md).
 */
export const OWN_FROM_SHARE = 0.25;
/** Methods whose answers are followed (the daemons' method tables are smaller; this bounds any other use). */
const METHODS_KEPT = 256;

/** The bytes of an answer's status line and headers as they came (the blank line after them included). */
function headBytes(res: http.IncomingMessage): number {
  let n = `HTTP/${res.httpVersion} ${res.statusCode} ${res.statusMessage}\r\n\r\n`.length;
  for (let i = 0; i < res.rawHeaders.length; i += 2) n += res.rawHeaders[i].length + res.rawHeaders[i + 1].length + 4;
  return n;
}

/**
 * Close a connection with a reset, so neither end waits in TIME_WAIT. A reset the kernel refuses (the
 * daemon closed the connection itself, as after `Connection: close`) is emitted as an error of the socket
 * and of its request (EINVAL): it is expected here.
 */
function reset(socket: import('node:net').Socket): void {
  socket.on('error', () => {});
  socket.resetAndDestroy();
}

/** 127.0.0.0/8, ::1 and localhost: the daemon runs on this machine. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d+\.\d+\.\d+$/.test(h) || /^::ffff:127\./.test(h);
}

export function createRpcClient(options: RpcClientOptions): RpcConnection {
  const name = options.name ?? 'daemon';
  const timeoutDefault = options.timeoutMs ?? 40_000;
  const concurrency = options.concurrency ?? 5;
  const url = new URL(options.url);
  const lib = url.protocol === 'https:' ? https : http;
  // A kept-alive socket idle for IDLE_MS is closed: a daemon told to stop (or sent SIGTERM) exits only once
  // every RPC connection is gone, and otherwise waits its rpcservertimeout (30 s) for ours. Under load
  // sockets are never idle that long, so the keep-alive gain stays.
  const agent = new lib.Agent({ keepAlive: true, maxSockets: concurrency, timeout: IDLE_MS });
  const auth = options.user !== undefined ? 'Basic ' + Buffer.from(`${options.user}:${options.password ?? ''}`).toString('base64') : undefined;
  const where = `${url.protocol}//${url.host}${url.pathname}`;
  const ownConnections = url.protocol === 'http:' && isLoopback(url.hostname);
  /** Method (or `batch`) -> the moving share of its answers larger than FIRST_WRITE, where own connections apply. */
  const largeShare = new Map<string, number>();
  let opened = 0;
  let nextId = 0;

  function ownFor(key: string, opts: RpcCallOptions): boolean {
    if (!ownConnections) return false;
    return opts.ownConnection ?? (largeShare.get(key) ?? 0) > OWN_FROM_SHARE;
  }
  function answered(key: string, bytes: number): void {
    if (!ownConnections) return;
    if (largeShare.size >= METHODS_KEPT && !largeShare.has(key)) largeShare.clear();
    const share = largeShare.get(key) ?? 0;
    largeShare.set(key, share + ((bytes > FIRST_WRITE ? 1 : 0) - share) / 8);
  }

  // At most `concurrency` requests at once; waiters leave the line when their signal aborts.
  let running = 0;
  const waiting: { go: () => void; fail: (e: unknown) => void; signal?: AbortSignal }[] = [];
  async function slot(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (running < concurrency) return void running++;
    await new Promise<void>((go, fail) => {
      const w = { go, fail, signal };
      waiting.push(w);
      signal?.addEventListener('abort', () => {
        const i = waiting.indexOf(w);
        if (i >= 0) waiting.splice(i, 1), fail(signal.reason);
      }, { once: true });
    });
  }
  function release() {
    const next = waiting.shift();
    if (next) next.go();
    else running--;
  }

  /**
   * One request: on a connection of its own (`own`), or kept-alive; `watch`ed, a kept-alive answer whose
   * headers announce more than FIRST_WRITE bytes is dropped with its connection and asked again on one of
   * its own, rather than waited for.
   */
  function send(payload: string, signal: AbortSignal, own: boolean, watch: boolean, retried = false): Promise<{ status: number; text: string; bytes: number }> {
    if (own) opened++;
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) };
      if (auth) headers.authorization = auth;
      // An own connection still says keep-alive: the daemon then leaves it open, and we reset it (a daemon
      // that closed first would hold the address pair in TIME_WAIT for a minute, on this machine).
      if (own) headers.connection = 'keep-alive';
      let socket: import('node:net').Socket | null = null;
      let moved = false;
      const req = lib.request(url, { method: 'POST', agent: own ? false : agent, headers, signal }, (res) => {
        const head = headBytes(res);
        if (watch && head + Number(res.headers['content-length'] ?? 0) > FIRST_WRITE) {
          moved = true;
          // Reset, as an own connection is: a plain close would leave our end in TIME_WAIT for a minute.
          reset(res.socket as import('node:net').Socket);
          req.destroy();
          send(payload, signal, true, false).then(resolve, reject);
          return;
        }
        const chunks: Buffer[] = [];
        let body = 0;
        res.on('data', (c: Buffer) => (chunks.push(c), (body += c.length)));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks, body).toString('utf8'), bytes: head + body });
          if (socket && !socket.destroyed) reset(socket);
        });
        res.on('error', reject);
      });
      if (own) req.on('socket', (s) => (socket = s as import('node:net').Socket));
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (moved) return;
        socket?.destroy();
        // A kept-alive socket the daemon closed meanwhile: try once on a fresh one (node's documented pattern).
        if (!retried && req.reusedSocket && e.code === 'ECONNRESET') send(payload, signal, own, watch, true).then(resolve, reject);
        else reject(e);
      });
      req.end(payload);
    });
  }

  async function post(key: string, body: unknown, opts: RpcCallOptions): Promise<unknown> {
    const timeoutMs = opts.timeoutMs ?? timeoutDefault;
    const limit = deadline(timeoutMs, opts.signal);
    try {
      return await answer(key, body, opts, limit.signal, timeoutMs);
    } finally {
      limit.done();
    }
  }

  async function answer(key: string, body: unknown, opts: RpcCallOptions, signal: AbortSignal, timeoutMs: number): Promise<unknown> {
    let res: { status: number; text: string; bytes: number };
    try {
      await slot(signal);
    } catch {
      throw aborted(signal, timeoutMs);
    }
    try {
      const own = ownFor(key, opts);
      res = await send(JSON.stringify(body), signal, own, !own && ownConnections && opts.ownConnection === undefined);
      answered(key, res.bytes);
    } catch (e) {
      if (signal.aborted) throw aborted(signal, timeoutMs);
      const code = (e as NodeJS.ErrnoException).code ?? 'ECONNREFUSED';
      throw new RpcError('unreachable', code, `The ${name} is unreachable at ${where} (${code})`);
    } finally {
      release();
    }
    if (res.status === 401 || res.status === 403) throw new RpcError('unreachable', res.status, `The ${name} refused the RPC credentials (HTTP ${res.status})`);
    try {
      return JSON.parse(res.text);
    } catch {
      throw new RpcError('protocol', res.status, `The ${name} answered HTTP ${res.status} without JSON`);
    }
  }

  /** Our deadline or the caller's (a timeout too) versus a caller that went away. */
  function aborted(signal: AbortSignal, timeoutMs: number): RpcError {
    return (signal.reason as Error | undefined)?.name === 'TimeoutError'
      ? new RpcError('timeout', 'ETIMEDOUT', `The ${name} did not answer within ${timeoutMs} ms`)
      : new RpcError('timeout', 'ABORTED', `The call to the ${name} was aborted`);
  }

  function unwrap(answer: any): unknown {
    if (answer && answer.error) {
      const code = typeof answer.error.code === 'number' ? answer.error.code : 500;
      throw new RpcError('rpc', code, String(answer.error.message ?? 'Unknown daemon error'));
    }
    if (!answer || !('result' in answer)) throw new RpcError('protocol', 500, `The ${name} answered without a result`);
    return answer.result;
  }

  return {
    options,
    get inFlight() {
      return running + waiting.length;
    },
    get ownConnectionsOpened() {
      return opened;
    },
    async call<T>(method: string, params: unknown[] = [], opts: RpcCallOptions = {}) {
      nextId = (nextId + 1) % 1000;
      return unwrap(await post(method, { jsonrpc: '1.0', id: nextId, method, params }, opts)) as T;
    },
    async batch(calls, opts = {}) {
      const answers = (await post('batch', calls.map((c, i) => ({ jsonrpc: '1.0', id: i, method: c.method, params: c.params ?? [] })), opts)) as any[];
      if (!Array.isArray(answers)) throw new RpcError('protocol', 500, `The ${name} did not answer the batch with a list`);
      const byId = new Map(answers.map((a) => [a?.id, a]));
      return calls.map((_, i) => {
        try {
          return unwrap(byId.get(i));
        } catch (e) {
          return e as RpcError;
        }
      });
    },
    close: () => agent.destroy(),
    closeIdle() {
      for (const list of Object.values(agent.freeSockets)) for (const socket of list ?? []) socket.destroy();
    },
  };
}
