/**
 * The `daemon` service other plugins use (`deps: { daemon: daemonService }`, see api.ts): the JSON-RPC client with
 * this node's limits applied. At most `concurrency` calls run at once; at most `maxQueued` more wait, beyond
 * that a call fails at once; no call, waiting included, outlives `timeoutMs`. Hot public reads go through
 * the short cache. Credentials are (re)read from the config, cookie or conf file when the daemon refuses or
 * cannot be reached, so a daemon restarted with a new cookie is picked up without restarting the node.
 */
import { RpcError, createRpcClient, type RpcClient, type RpcClientOptions, type RpcConnection } from '../../lib/daemon-rpc/rpc.ts';
import { HotCache } from './cache.ts';
import { resolveConnection, type Connection, type DaemonSettings } from './settings.ts';

export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  /** false: never answer from (or fill) the cache; privileged routes pass false. */
  cache?: boolean;
}

export interface DaemonService extends RpcClient {
  call<T = unknown>(method: string, params?: unknown[], opts?: CallOptions): Promise<T>;
  /** One cheap call on a separate connection, so a saturated queue does not hide a healthy daemon. */
  probe(): Promise<{ blocks: number; headers: number; chain: string; bestblockhash: string }>;
  readonly cache: HotCache;
  /** Where the daemon is reached (no secrets), once resolved. */
  describe(): { url?: string; source?: string; error?: string };
  /** Close kept-alive connections (plugin dispose). */
  close(): void;
}

export function createDaemonService(settings: DaemonSettings, clock: { now(): number }): DaemonService {
  const cache = new HotCache(clock, settings.cache);
  let conn: Connection | undefined;
  let client: RpcConnection | undefined;
  let healthClient: RpcConnection | undefined;
  let resolveError: string | undefined;
  let stale = true;
  let active = 0;

  function connect(): RpcClient {
    if (!stale && client) return client;
    let next: Connection;
    try {
      next = resolveConnection(settings);
      resolveError = undefined;
    } catch (e) {
      resolveError = (e as Error).message;
      stale = true;
      throw new RpcError('unreachable', 'ENOCONF', `The daemon is unreachable: ${resolveError}`);
    }
    stale = false;
    if (!client || !conn || next.url !== conn.url || next.user !== conn.user || next.password !== conn.password) {
      const base = { url: next.url, user: next.user, password: next.password, name: 'daemon' };
      // The old clients are not closed here: calls may still run on them; their idle sockets time out.
      client = createRpcClient({ ...base, timeoutMs: settings.timeoutMs, concurrency: settings.concurrency });
      healthClient = createRpcClient({ ...base, timeoutMs: settings.health.timeoutMs, concurrency: 1 });
    }
    conn = next;
    return client;
  }

  /** Run one RPC under the in-flight bound and the overall deadline; retry once after new credentials. */
  async function bounded<T>(run: (c: RpcClient, opts: { signal: AbortSignal; timeoutMs: number }) => Promise<T>, opts: CallOptions): Promise<T> {
    if (active >= settings.concurrency + settings.maxQueued)
      throw new RpcError('timeout', 'EBUSY', `The daemon is busy: ${active} calls are running or waiting; try again shortly`);
    const timeoutMs = opts.timeoutMs ?? settings.timeoutMs;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline;
    active++;
    try {
      const first = connect();
      try {
        return await run(first, { signal, timeoutMs });
      } catch (e) {
        if (!(e instanceof RpcError) || e.kind !== 'unreachable') throw e;
        stale = true; // a restarted daemon may have a new cookie or port: re-read, retry once if it changed
        const second = connect();
        if (second === first) throw e;
        return await run(second, { signal, timeoutMs });
      }
    } catch (e) {
      throw asRpcError(e, timeoutMs);
    } finally {
      active--;
    }
  }

  const service: DaemonService = {
    cache,
    get inFlight() {
      return active;
    },
    get options(): Readonly<RpcClientOptions> {
      return { url: conn?.url ?? '', name: 'daemon', timeoutMs: settings.timeoutMs, concurrency: settings.concurrency };
    },
    call<T>(method: string, params: unknown[] = [], opts: CallOptions = {}): Promise<T> {
      const run = (o: CallOptions) => bounded((c, ro) => c.call<T>(method, params, ro), o);
      if (opts.cache === false) return run(opts);
      // A shared (cacheable) load must not die with the first caller that goes away.
      const shared = cache.ttlFor(method, params) > 0;
      return cache.get(method, params, () => run(shared ? { ...opts, signal: undefined } : opts)) as Promise<T>;
    },
    batch(calls, opts = {}) {
      return bounded((c, o) => c.batch(calls, o), opts);
    },
    async probe() {
      connect();
      return (await healthClient!.call('getblockchaininfo', [])) as any;
    },
    describe() {
      return { url: conn?.url, source: conn?.source, error: resolveError };
    },
    close() {
      client?.close();
      healthClient?.close();
    },
  };
  return service;
}

/** Aborts and timeouts from the queue arrive as DOM errors; callers only ever see RpcError. */
function asRpcError(e: unknown, timeoutMs: number): RpcError {
  if (e instanceof RpcError) return e;
  const name = (e as Error)?.name;
  if (name === 'TimeoutError') return new RpcError('timeout', 'ETIMEDOUT', `The daemon did not answer within ${timeoutMs} ms`);
  if (name === 'AbortError') return new RpcError('timeout', 'ABORTED', 'The call to the daemon was aborted');
  return new RpcError('protocol', 500, `The daemon call failed: ${(e as Error)?.message ?? String(e)}`);
}
