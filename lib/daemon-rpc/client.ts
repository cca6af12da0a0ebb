/**
 * The client of one bitcoin-family daemon as a plugin uses it: the endpoint and credentials are (re)read
 * from the config, cookie or conf file when the daemon refuses or cannot be reached (a daemon restarted with
 * a new cookie is picked up without restarting the node), calls run in bounded lanes (lanes.ts) with one
 * deadline each, and a separate one-slot connection answers health checks even when the lanes are full.
 */
import { RpcError, createRpcClient, type RpcCallOptions, type RpcClient, type RpcClientOptions, type RpcConnection } from './rpc.ts';
import { resolveEndpoint, type DaemonProfile, type Endpoint } from './endpoint.ts';
import { Lane, type LaneName } from './lanes.ts';
import { deadline } from './deadline.ts';
import type { RpcSettings } from './config.ts';

export interface DaemonCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** Which lane the call waits in; node-internal callers (the default) and the operator use 'priority'. */
  lane?: LaneName;
  /** See RpcCallOptions.ownConnection; left out, the client decides by the size of the method's last answer. */
  ownConnection?: boolean;
}

export interface DaemonClient extends RpcClient {
  call<T = unknown>(method: string, params?: unknown[], opts?: DaemonCallOptions): Promise<T>;
  batch(calls: { method: string; params?: unknown[] }[], opts?: DaemonCallOptions): Promise<(unknown | RpcError)[]>;
  /** One call on the health connection (its own socket and deadline), outside the lanes. */
  health<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Calls running or waiting, per lane. */
  lanes(): Record<LaneName, number>;
  /** Where the daemon is reached (no secrets), once resolved. */
  describe(): { url?: string; source?: string; error?: string };
  /** Drop idle kept-alive sockets: a stopping daemon waits for its open connections before it exits. */
  closeIdle(): void;
  /** Close every socket (plugin dispose). */
  close(): void;
}

export function createDaemonClient(settings: RpcSettings, profile: DaemonProfile): DaemonClient {
  const what = profile.what === 'daemon' ? 'daemon' : `${profile.what} daemon`;
  const lanes: Record<LaneName, Lane> = {
    public: new Lane('public', settings, what),
    priority: new Lane('priority', settings.priority, what),
  };
  let endpoint: Endpoint | undefined;
  let client: RpcConnection | undefined;
  let healthClient: RpcConnection | undefined;
  let resolveError: string | undefined;
  let stale = true;

  function connect(): RpcConnection {
    if (!stale && client) return client;
    let next: Endpoint;
    try {
      next = resolveEndpoint(settings, profile);
      resolveError = undefined;
    } catch (e) {
      resolveError = (e as Error).message;
      stale = true;
      throw new RpcError('unreachable', 'ENOCONF', `The ${what} is unreachable: ${resolveError}`);
    }
    stale = false;
    if (!client || !endpoint || next.url !== endpoint.url || next.user !== endpoint.user || next.password !== endpoint.password) {
      const base = { url: next.url, user: next.user, password: next.password, name: what };
      // The old clients are not closed here: calls may still run on them; their idle sockets time out.
      client = createRpcClient({ ...base, timeoutMs: settings.timeoutMs, concurrency: settings.concurrency + settings.priority.concurrency });
      healthClient = createRpcClient({ ...base, timeoutMs: settings.health.timeoutMs, concurrency: 1 });
    }
    endpoint = next;
    return client;
  }

  /** Run one RPC in its lane under the overall deadline; retry once after new credentials. */
  async function bounded<T>(run: (c: RpcClient, o: RpcCallOptions & { signal: AbortSignal; timeoutMs: number }) => Promise<T>, opts: DaemonCallOptions): Promise<T> {
    const timeoutMs = opts.timeoutMs ?? settings.timeoutMs;
    const ownConnection = opts.ownConnection;
    const limit = deadline(timeoutMs, opts.signal);
    const signal = limit.signal;
    try {
      return await lanes[opts.lane ?? 'priority'].run(async () => {
        const first = connect();
        try {
          return await run(first, { signal, timeoutMs, ownConnection });
        } catch (e) {
          if (!(e instanceof RpcError) || e.kind !== 'unreachable') throw e;
          stale = true; // a restarted daemon may have a new cookie or port: re-read, retry once if it changed
          const second = connect();
          if (second === first) throw e;
          return await run(second, { signal, timeoutMs, ownConnection });
        }
      }, signal);
    } catch (e) {
      throw asRpcError(e, timeoutMs, what);
    } finally {
      limit.done();
    }
  }

  const self: DaemonClient = {
    get inFlight() {
      return lanes.public.inFlight + lanes.priority.inFlight;
    },
    get options(): Readonly<RpcClientOptions> {
      return { url: endpoint?.url ?? '', name: what, timeoutMs: settings.timeoutMs, concurrency: settings.concurrency };
    },
    async call<T>(method: string, params: unknown[] = [], opts: DaemonCallOptions = {}): Promise<T> {
      const out = await bounded((c, o) => c.call<T>(method, params, o), opts);
      // The daemon answered that it is stopping; it exits only once our kept-alive sockets are gone (~30 s).
      if (method === 'stop') self.closeIdle();
      return out;
    },
    batch(calls, opts = {}) {
      return bounded((c, o) => c.batch(calls, o), opts);
    },
    async health<T>(method: string, params: unknown[] = []): Promise<T> {
      connect();
      return healthClient!.call<T>(method, params);
    },
    lanes: () => ({ public: lanes.public.inFlight, priority: lanes.priority.inFlight }),
    describe: () => ({ url: endpoint?.url, source: endpoint?.source, error: resolveError }),
    closeIdle() {
      client?.closeIdle();
      healthClient?.closeIdle();
    },
    close() {
      client?.close();
      healthClient?.close();
    },
  };
  return self;
}

/** Aborts and timeouts from a lane arrive as DOM errors; callers only ever see RpcError. */
function asRpcError(e: unknown, timeoutMs: number, what: string): RpcError {
  if (e instanceof RpcError) return e;
  const name = (e as Error)?.name;
  if (name === 'TimeoutError') return new RpcError('timeout', 'ETIMEDOUT', `The ${what} did not answer within ${timeoutMs} ms`);
  if (name === 'AbortError') return new RpcError('timeout', 'ABORTED', `The call to the ${what} was aborted`);
  return new RpcError('protocol', 500, `The ${what} call failed: ${(e as Error)?.message ?? String(e)}`);
}
