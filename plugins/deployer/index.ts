/**
 * The deployment trigger (spec: deploy-trigger.md): git hosts post webhooks; the newest commit of the
 * tracked branch is fetched, built beside the running release and swapped in, with rollback on any failure.
 * Served by the `deployer` host (`npm run deployer`), configured from env variables (README).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { VERSION, coreServices, definePlugin } from '../../core/plugin-api.ts';
import { apiKeyStrategy } from './apikey.ts';
import { handlers } from './api.ts';
import { pageHandlers } from './page.ts';
import { configEnv, configProblem, configSchema, configWarnings, type DeployerConfig } from './config.ts';
import { DeployFailure, Engine } from './engine.ts';
import { killGroup, resolveIdentity, type Identity } from './proc.ts';
import { DeployQueue } from './queue.ts';
import { RateLimiter } from './ratelimit.ts';
import { StateStore } from './state.ts';
import { Supervisor } from './supervisor.ts';
import { UploadGate } from './uploads.ts';

/**
 * Folder modes: the service's state, logs and git cache are closed to the children's user (it must not
 * write or read them); the releases folder is open for it to reach its own release.
 */
function prepareFolders(cfg: DeployerConfig, dataDir: string, who: Identity | null): void {
  fs.mkdirSync(cfg.root, { recursive: true });
  for (const d of ['logs', 'releases']) fs.mkdirSync(path.join(cfg.root, d), { recursive: true });
  fs.mkdirSync(dataDir, { recursive: true });
  if (!who) return;
  fs.chmodSync(cfg.root, 0o755);
  fs.chmodSync(path.join(cfg.root, 'releases'), 0o755);
  fs.chmodSync(path.join(cfg.root, 'logs'), 0o700);
  fs.chmodSync(dataDir, 0o700);
  if (fs.existsSync(path.join(cfg.root, 'repo.git'))) fs.chmodSync(path.join(cfg.root, 'repo.git'), 0o700);
  // A parent folder closed to others (mkdtemp, /root) would leave the app unable to reach its release.
  const probe = spawnSync('test', ['-x', path.join(cfg.root, 'releases')], { uid: who.uid, gid: who.gid });
  if (probe.status !== 0)
    throw new Error(`DEPLOY_ROOT ${cfg.root} cannot be reached by user ${who.name} (uid ${who.uid}), who runs builds and the app: a parent folder is closed to others; choose a DEPLOY_ROOT such as /srv/deploy`);
}

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
    for (const w of configWarnings(cfg)) ctx.log.warn(w);

    const who = resolveIdentity(cfg.appUser, cfg.root);
    if (!who) ctx.log.warn('the service does not run as root: builds and the app run as its own user and could read its environment (WEBHOOK_SECRET, API_KEY); run it as root or give it no secrets it must keep from the app');
    const stateDir = path.join(ctx.node.dataDir, 'deployer');
    prepareFolders(cfg, ctx.node.dataDir, who);

    const store = new StateStore(path.join(stateDir, 'state.json'));
    store.load();
    // Our apps carry the deploy root in their env: a pid left by a crashed run is ours only if it says so.
    const supervisor = new Supervisor({
      logFile: path.join(cfg.root, 'logs', 'app.log'),
      pidFile: path.join(stateDir, 'app.pid'),
      log: ctx.log,
      marker: cfg.root,
      who,
    });
    const engine = new Engine(cfg, store, supervisor, ctx.log, ctx.clock, who);
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
    if (current) {
      const spec = { release: current.id, dir: current.app_dir ?? current.dir, command: current.run, env: current.env };
      // A service killed without stopping its app left it serving: take it over rather than start a second copy.
      if (!supervisor.adopt(spec)) {
        await supervisor.stopLeftover();
        await supervisor.start(spec);
      }
    } else await supervisor.stopLeftover();
    // A commit that was waiting (or being deployed) when the service stopped deploys now.
    if (store.state.pending) queue.submit(store.state.pending);

    // POLLING_INTERVAL: deploy the branch head when it moves, without webhooks (a head that is live deploys nothing).
    const poller =
      cfg.pollingIntervalSeconds > 0
        ? setInterval(() => {
            if (queue.pending || queue.running) return;
            queue.submit({ commit: null, provider: 'poll', origin: 'poll', deliveryId: `poll-${ctx.clock.now()}`, receivedAt: ctx.clock.now(), message: '' });
          }, cfg.pollingIntervalSeconds * 1000)
        : undefined;
    poller?.unref();

    ctx.log.info(
      { repo: engine.auth.redact(cfg.repoUrl), branch: cfg.branch, appPort: cfg.appPort, release: current?.id ?? null, verify: cfg.signatureVerify, user: who?.name ?? null, adopted: supervisor.status === 'RUNNING' && !!current },
      'deployment trigger ready',
    );

    const dropApiKey = ctx.auth.useStrategy('apikey', apiKeyStrategy(cfg.apiKey));
    return {
      handlers: {
        ...pageHandlers(),
        ...handlers({
          cfg, log: ctx.log, clock: ctx.clock, store, engine, queue, supervisor,
          limiter: new RateLimiter(cfg.rateLimitPerMinute, () => ctx.clock.now()),
          // The manifest's body limit of the webhook route (25 MB, GitHub's payload cap).
          uploads: new UploadGate(cfg.maxUploads, 25 * 1024 * 1024),
        }),
      },
      async dispose() {
        dropApiKey();
        clearInterval(poller);
        engine.stopping = true;
        const active = engine.active;
        // The interrupted commit goes back in the pending slot (unless a newer one waits there).
        if (active && !store.state.pending) store.state.pending = active.request;
        active?.abort.abort(new DeployFailure('interrupted', 'the service is stopping'));
        // The build's whole group, awaited (SIGKILL after 2 s): a tool that catches SIGTERM before it has
        // spawned its child (npm run-script does) must not leave that child running after the service.
        await killGroup(store.state.in_progress?.pgid, 2000);
        await queue.close();
        await supervisor.stop();
        await store.save();
      },
    };
  },
});
