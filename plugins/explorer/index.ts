/**
 * The explorer: indexes the daemon's chain into its store (embedded SQLite by default, or PostgreSQL) (unspent outputs, transaction lists and
 * balances per address, amounts as integers) and follows its tip, rolling back reorganisations. Uses the
 * `daemon` service; serves the /explorer routes.
 */
import { configSchema, coreServices, definePlugin } from '../../core/plugin-api.ts';
import { daemonService, type RpcClient } from '../daemon/api.ts';
import { explorerPayments } from './api.ts';
import { explorerHandlers } from './handlers.ts';
import { createStore, describeStore, retireLegacyIndex, storeConfigSchema, type StoreConfig } from './open-store.ts';
import { paymentsService } from './payments-service.ts';
import { BATCH_ROWS, Scanner } from './scanner.ts';

export interface ExplorerConfig {
  startHeight: number;
  autoStart: boolean;
  pollIntervalMs: number;
  retryIntervalMs: number;
  prefetch: number;
  batchRows: number;
  undoDepth: number;
  /** Entries an answer of /utxo or /transactions holds when the caller gives no `limit` (and the most it may ask). */
  pageLimit: number;
  store: StoreConfig;
}

type CallOpts = Parameters<RpcClient['call']>[2];

/** The daemon service with its hot-read cache bypassed: the scanner must see reorgs at once, and never fill the cache with blocks. */
export function uncached(daemon: RpcClient): RpcClient {
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
  deps: { daemon: daemonService, node: coreServices.node, log: coreServices.log },
  provides: { payments: explorerPayments },
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
      batchRows: { type: 'integer', minimum: 1, maximum: 1_000_000, default: BATCH_ROWS },
      undoDepth: { type: 'integer', minimum: 10, maximum: 1_000_000, default: 1000 },
      pageLimit: { type: 'integer', minimum: 1, maximum: 100_000, default: 1000 },
      store: storeConfigSchema,
    },
  }),
  async setup(ctx) {
    const cfg = ctx.config;
    const rpc = uncached(ctx.daemon);
    const dataDir = ctx.node.dataDir;
    retireLegacyIndex(dataDir, ctx.log);
    const store = createStore(cfg.store, dataDir, cfg.undoDepth);
    const scanner = new Scanner(rpc, store, {
      startHeight: cfg.startHeight,
      pollMs: cfg.pollIntervalMs,
      retryMs: cfg.retryIntervalMs,
      prefetch: cfg.prefetch,
      batchRows: cfg.batchRows,
      log: ctx.log,
    });
    // Opened before serving, so reads answer at once; a store that cannot be opened yet (database down) is
    // opened by the scanner when it next tries, and reads answer "unavailable" meanwhile.
    try {
      const t0 = performance.now();
      await scanner.open();
      ctx.log.info({ store: describeStore(cfg.store, dataDir), tip: store.tip(), openMs: Math.round(performance.now() - t0) }, 'explorer: index open');
    } catch (e) {
      ctx.log.warn({ store: describeStore(cfg.store, dataDir), err: (e as Error).message }, 'explorer: index not open yet; retrying with block processing');
    }
    if (cfg.autoStart) scanner.start();
    // For the apps plugin: registry payments read from the blocks scanned here.
    const payments = paymentsService(store);
    const api = explorerHandlers({ rpc, store, scanner, startHeight: cfg.startHeight, pageLimit: cfg.pageLimit });
    return {
      handlers: api.handlers,
      services: { payments },
      dispose: async () => {
        await api.idle();
        await scanner.stop();
        await store.close();
      },
    };
  },
});
