/**
 * The deployment trigger (spec: deploy-trigger.md): git hosts post webhooks; the newest commit of the
 * tracked branch is fetched, built and started as a supervised app, with rollback on any failure.
 * Served by the `deployer` host (`npm run deployer`), configured from env variables (README).
 */
import fs from 'node:fs';
import path from 'node:path';
import { VERSION, coreServices, definePlugin } from '../../core/plugin-api.ts';
import { apiKeyStrategy } from './apikey.ts';
import { handlers } from './api.ts';
import { configEnv, configProblem, configSchema } from './config.ts';
import { DeployFailure, Engine } from './engine.ts';
import { DeployQueue } from './queue.ts';
import { RateLimiter } from './ratelimit.ts';
import { StateStore } from './state.ts';
import { Supervisor } from './supervisor.ts';

export default definePlugin({
  id: 'deployer',
  version: VERSION,
  configSchema,
  env: configEnv,
  deps: { log: coreServices.log, clock: coreServices.clock, node: coreServices.node, auth: coreServices.auth },
  async setup(ctx) {
    const cfg = { ...ctx.config, root: path.resolve(ctx.config.root) };
    const problem = configProblem(cfg);
    if (problem) throw new Error(problem);
    if (cfg.appPort === ctx.node.apiPort) throw new Error(`APP_PORT ${cfg.appPort} is the service's own port (WEBHOOK_PORT); the app needs another`);
    fs.mkdirSync(path.join(cfg.root, 'logs'), { recursive: true });

    const store = new StateStore(path.join(ctx.node.dataDir, 'deployer', 'state.json'));
    store.load();
    // Our apps carry the deploy root in their env: a pid left by a crashed run is stopped only if it is ours.
    const marker = cfg.root;
    await Supervisor.reapOrphan(store.state.app_pid, marker, ctx.log);
    const supervisor = new Supervisor({
      logFile: path.join(cfg.root, 'logs', 'app.log'),
      log: ctx.log,
      marker,
      onPid: (pid) => {
        store.state.app_pid = pid;
        void store.save();
      },
    });
    const engine = new Engine(cfg, store, supervisor, ctx.log, ctx.clock);
    await engine.recover();
    const queue = new DeployQueue({
      debounceMs: cfg.debounceSeconds * 1000,
      run: (req) => engine.deploy(req),
      onPending: (req) => {
        store.state.pending = req;
        void store.save();
      },
      onError: (err) => ctx.log.error({ err }, 'deployment crashed'),
    });

    const current = store.currentRelease();
    if (current) await supervisor.start({ release: current.id, dir: current.dir, command: current.run, env: current.env });
    // A commit that was waiting (or being deployed) when the service stopped deploys now.
    if (store.state.pending) queue.submit(store.state.pending);
    ctx.log.info({ repo: cfg.repoUrl, branch: cfg.branch, appPort: cfg.appPort, release: current?.id ?? null, verify: cfg.signatureVerify }, 'deployment trigger ready');

    const dropApiKey = ctx.auth.useStrategy('apikey', apiKeyStrategy(cfg.apiKey));
    return {
      handlers: handlers({ cfg, log: ctx.log, clock: ctx.clock, store, engine, queue, supervisor, limiter: new RateLimiter(cfg.rateLimitPerMinute, () => ctx.clock.now()) }),
      async dispose() {
        dropApiKey();
        engine.stopping = true;
        const active = engine.active;
        // The interrupted commit goes back in the pending slot (unless a newer one waits there).
        if (active && !store.state.pending) store.state.pending = active.request;
        active?.abort.abort(new DeployFailure('interrupted', 'the service is stopping'));
        await queue.close();
        await supervisor.stop();
        await store.save();
      },
    };
  },
});
