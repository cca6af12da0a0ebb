/**
 * The explorer: indexes the daemon's chain into the embedded store (unspent outputs, transaction lists and
 * balances per address, amounts as integers) and follows its tip, rolling back reorganisations. Uses the
 * `daemon` service; serves the /explorer routes.
 */
import { configSchema, coreServices, definePlugin } from '../../core/plugin-api.ts';
import { daemonService, type RpcClient } from '../daemon/api.ts';
import { explorerHandlers } from './handlers.ts';
import { NedbExplorerStore } from './nedb-store.ts';
import { Scanner } from './scanner.ts';

export interface ExplorerConfig {
  startHeight: number;
  autoStart: boolean;
  pollIntervalMs: number;
  retryIntervalMs: number;
  prefetch: number;
  undoDepth: number;
}

type CallOpts = Parameters<RpcClient['call']>[2];

/** The daemon service with its hot-read cache bypassed: the scanner must see reorgs at once, and never fill the cache with blocks. */
function uncached(daemon: RpcClient): RpcClient {
  return {
    get inFlight() {
      return daemon.inFlight;
    },
    get options() {
      return daemon.options;
    },
    call: <T>(method: string, params?: unknown[], opts?: CallOpts) => daemon.call<T>(method, params, { ...opts, cache: false } as CallOpts),
    batch: (calls, opts) => daemon.batch(calls, opts),
  };
}

export default definePlugin({
  id: 'explorer',
  version: '1.0.0',
  deps: { daemon: daemonService, store: coreServices.store, log: coreServices.log },
  configSchema: configSchema<ExplorerConfig>({
    type: 'object',
    additionalProperties: false,
    properties: {
      // Blocks below are not read: their outputs, and spends of them, are not in the index.
      startHeight: { type: 'integer', minimum: 0, default: 0 },
      autoStart: { type: 'boolean', default: true },
      pollIntervalMs: { type: 'integer', minimum: 50, maximum: 600_000, default: 5000 },
      retryIntervalMs: { type: 'integer', minimum: 50, maximum: 3_600_000, default: 15_000 },
      prefetch: { type: 'integer', minimum: 1, maximum: 256, default: 32 },
      undoDepth: { type: 'integer', minimum: 10, maximum: 1_000_000, default: 1000 },
    },
  }),
  setup(ctx) {
    const cfg = ctx.config;
    const rpc = uncached(ctx.daemon);
    const store = new NedbExplorerStore(ctx.store('index'), { undoDepth: cfg.undoDepth });
    const scanner = new Scanner(rpc, store, {
      startHeight: cfg.startHeight,
      pollMs: cfg.pollIntervalMs,
      retryMs: cfg.retryIntervalMs,
      prefetch: cfg.prefetch,
      log: ctx.log,
    });
    if (cfg.autoStart) scanner.start();
    const api = explorerHandlers({ rpc, store, scanner, startHeight: cfg.startHeight });
    return {
      handlers: api.handlers,
      dispose: async () => {
        await api.idle();
        await scanner.stop();
      },
    };
  },
});
