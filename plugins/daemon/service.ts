/**
 * The `daemon` service other plugins use (`deps: { daemon: daemonService }`, see api.ts): the shared daemon client
 * (lib/daemon-rpc: reconnects, bounded lanes, one deadline per call) with the short cache of hot public reads.
 */
import { createDaemonClient, type DaemonCallOptions, type DaemonClient } from '../../lib/daemon-rpc/client.ts';
import { HotCache } from './cache.ts';
import { DAEMON_PROFILE, type DaemonSettings } from './settings.ts';

export interface CallOptions extends DaemonCallOptions {
  /** false: never answer from (or fill) the cache; privileged routes pass false. */
  cache?: boolean;
}

export interface DaemonService extends DaemonClient {
  call<T = unknown>(method: string, params?: unknown[], opts?: CallOptions): Promise<T>;
  /** One cheap call on a separate connection, so a saturated queue does not hide a healthy daemon. */
  probe(): Promise<{ blocks: number; headers: number; chain: string; bestblockhash: string }>;
  readonly cache: HotCache;
}

export function createDaemonService(settings: DaemonSettings, clock: { now(): number }): DaemonService {
  const cache = new HotCache(clock, settings.cache);
  const client = createDaemonClient(settings, DAEMON_PROFILE);
  return Object.assign(Object.create(client) as DaemonClient, {
    cache,
    call<T>(method: string, params: unknown[] = [], opts: CallOptions = {}): Promise<T> {
      if (opts.cache === false) return client.call<T>(method, params, opts);
      // A shared (cacheable) load must not die with the first caller that goes away.
      const shared = cache.ttlFor(method, params) > 0;
      return cache.get(method, params, () => client.call(method, params, shared ? { ...opts, signal: undefined } : opts)) as Promise<T>;
    },
    probe: () => client.health<{ blocks: number; headers: number; chain: string; bestblockhash: string }>('getblockchaininfo', []),
  });
}
