/**
 * App volumes (issue 15): the volume browser, file operations, backup and restore, and the operator's file
 * share. It reaches volumes only through the apps plugin's typed service (what is installed, each
 * component's mountpoint and whether it is mounted, stop/start) and touches files only through
 * safe-path.ts (descriptors, never a link followed, never a shell).
 */
import path from 'node:path';
import { ApiError, configSchema, coreServices, definePlugin, type Handler, type PlainHandler } from '../../core/plugin-api.ts';
import { appsService } from '../apps/api.ts';
import { Periodic } from '../apps/periodic.ts';
import { backupHandlers, cleanupLocalBackups, recoverRestore } from './backup.ts';
import { browserHandlers, ComponentLock } from './browser.ts';
import { Root } from './safe-path.ts';
import { shareHandlers } from './share.ts';

export interface VolumesConfig {
  shareDir: string;
  maxExtractBytes: number;
  maxExtractEntries: number;
  maxRemoteBytes: number;
  maxUploadBytes: number;
  remoteTimeoutMs: number;
  localBackupMaxAgeHours: number;
  cleanupIntervalMs: number;
  stageHoldMs: number;
}

export default definePlugin({
  id: 'volumes',
  version: '1.0.0',
  deps: {
    apps: appsService,
    node: coreServices.node,
    events: coreServices.events,
    clock: coreServices.clock,
    log: coreServices.log,
  },
  configSchema: configSchema<VolumesConfig>({
    type: 'object',
    additionalProperties: false,
    properties: {
      shareDir: { type: 'string', default: '' },
      maxExtractBytes: { type: 'integer', minimum: 1, default: 10 * 1024 ** 3 },
      maxExtractEntries: { type: 'integer', minimum: 1, default: 1_000_000 },
      maxRemoteBytes: { type: 'integer', minimum: 1, default: 10 * 1024 ** 3 },
      // Also bounded by the route's body limit in the manifest (10 GB).
      maxUploadBytes: { type: 'integer', minimum: 1, default: 10 * 1024 ** 3 },
      remoteTimeoutMs: { type: 'integer', minimum: 100, default: 30_000 },
      localBackupMaxAgeHours: { type: 'number', exclusiveMinimum: 0, default: 24 },
      cleanupIntervalMs: { type: 'integer', minimum: 50, default: 3_600_000 },
      // Test aid: a pause after each restore stage is reported, so a test can kill the node inside it.
      stageHoldMs: { type: 'integer', minimum: 0, default: 0 },
    },
  }),
  async setup(ctx) {
    const cfg = ctx.config;
    const limits = { maxBytes: cfg.maxExtractBytes, maxEntries: cfg.maxExtractEntries };
    const lock = new ComponentLock();
    const deps = {
      apps: ctx.apps,
      events: ctx.events,
      log: ctx.log,
      limits,
      lock,
      maxRemoteBytes: cfg.maxRemoteBytes,
      maxUploadBytes: cfg.maxUploadBytes,
      remoteTimeoutMs: cfg.remoteTimeoutMs,
      localMaxAgeMs: cfg.localBackupMaxAgeHours * 3_600_000,
      now: () => ctx.clock.now(),
      stageHoldMs: cfg.stageHoldMs,
    };

    // A restore the node did not finish (it was killed, the machine lost power) is put in order first.
    const recover = async () => {
      for (const app of await ctx.apps.list())
        for (const c of app.components)
          if (c.mounted) await recoverRestore(deps, app.name, c.name, new Root(c.mountpoint)).catch((e) => ctx.log.error({ err: (e as Error).message, app: app.name, component: c.name }, 'volumes: restore recovery failed'));
    };
    const recovered = recover().catch((e) => ctx.log.error({ err: (e as Error).message }, 'volumes: restore recovery failed'));

    const cleanup = new Periodic(
      async () => {
        const n = await cleanupLocalBackups(deps);
        if (n) ctx.log.info({ removed: n }, 'volumes: local backups older than the limit removed');
      },
      (e) => ctx.log.warn({ err: e.message }, 'volumes: backup cleanup failed'),
    );
    cleanup.start(cfg.cleanupIntervalMs);

    // The operations queue answers an unexpected failure as a bare 500 problem; the cause goes to the log here.
    const logged = (handlers: Record<string, Handler>) =>
      Object.fromEntries(
        Object.entries(handlers).map(([name, fn]) => [
          name,
          (async (input) => {
            try {
              return await (fn as PlainHandler)(input);
            } catch (e) {
              if (!(e instanceof ApiError) && (e as Error)?.constructor?.name !== 'CanceledError') ctx.log.error({ err: e, handler: name }, 'volumes: request failed');
              throw e;
            }
          }) as PlainHandler,
        ]),
      );
    return {
      handlers: logged({
        ...browserHandlers({ apps: ctx.apps, limits, lock }),
        ...backupHandlers(deps),
        ...shareHandlers(cfg.shareDir || path.join(ctx.node.dataDir, 'coreshare')),
      }),
      dispose: async () => {
        await cleanup.stop();
        await recovered;
      },
    };
  },
});
