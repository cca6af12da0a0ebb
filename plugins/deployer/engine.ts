/**
 * One deployment, stage by stage: starting, git_pull, installing_dependencies, building, stopping_app,
 * starting_app, health_check, completed (the spec's stage names; the order is the reference hooks guide's
 * build -> stop -> start). The new release is installed and built in its own folder while the old release
 * keeps serving; the old app is stopped only once the new release is built, so the app is down only from
 * `stopping_app` until the new app listens. A failure before `stopping_app` (git, install, pre-deploy hook,
 * build, the DEPLOYMENT_TIMEOUT watchdog) never touches the running app; a failure after it rolls back: the
 * release that ran before is started again.
 */
import type { Log } from '../../core/plugin-api.ts';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Clock } from '../../core/plugin-api.ts';
import type { DeployerConfig } from './config.ts';
import { GitAuth, GitCache, GitError } from './git.ts';
import { BuildLog, pruneLogs } from './logs.ts';
import { childEnv, describe, giveTo, killLeftover, runCommand, type Command, type Identity } from './proc.ts';
import { ProjectError, lateRun, lockHash, plan as makePlan, type Plan } from './project.ts';
import { probe, sleep } from './probe.ts';
import type { DeployRequest } from './queue.ts';
import type { Deployment, Release, StateStore } from './state.ts';
import type { Supervisor } from './supervisor.ts';

export const STAGES = ['starting', 'git_pull', 'installing_dependencies', 'building', 'stopping_app', 'starting_app', 'health_check', 'completed'] as const;
export type Stage = (typeof STAGES)[number];

const STATIC_SERVER = fileURLToPath(new URL('./static-server.mjs', import.meta.url));

/** A failed deployment with the reason recorded in `last_failed_deployment.reason`. */
export class DeployFailure extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** Nothing to deploy (the commit is live already, or older than the live one): no release, no failure. */
class Skip extends Error {}

export interface Active {
  request: DeployRequest;
  attempt: number;
  stage: Stage;
  commit: string | null;
  rollbackCommit: string | null;
  /** Epoch ms. */
  startedAt: number;
  /** Epoch ms the current stage began. */
  stageAt: number;
  abort: AbortController;
}

/** `2024-01-01T12:00:00+00:00`, the reference's format for deployed_at / updated_at / build_timestamp. */
export const isoSeconds = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, '+00:00');
const pad = (n: number) => String(n).padStart(3, '0');

export class Engine {
  active: Active | null = null;
  /** Set while the service shuts down: an interrupted deployment does not start the old app again. */
  stopping = false;
  readonly releasesDir: string;
  readonly logsDir: string;
  readonly auth: GitAuth;
  private readonly git: GitCache;
  /** Marks build processes' env, so a restarted service can stop a build a crash left running. */
  readonly buildMarker: string;

  constructor(
    private readonly cfg: DeployerConfig,
    private readonly store: StateStore,
    private readonly supervisor: Supervisor,
    private readonly log: Log,
    private readonly clock: Clock,
    private readonly who: Identity | null,
  ) {
    this.releasesDir = path.join(cfg.root, 'releases');
    this.logsDir = path.join(cfg.root, 'logs');
    this.auth = new GitAuth(cfg.repoUrl, cfg.gitUsername, cfg.gitToken);
    this.git = new GitCache(path.join(cfg.root, 'repo.git'), this.auth, cfg.branch);
    this.buildMarker = `DEPLOYER_BUILD=${cfg.root}`;
    fs.mkdirSync(this.releasesDir, { recursive: true });
    fs.mkdirSync(this.logsDir, { recursive: true });
  }

  /** Env of the app of a release (and of its install, build and hook steps). */
  private appEnv(commit: string, releaseId: string, appDir: string, p: Plan): Record<string, string> {
    const env: Record<string, string> = {
      PORT: String(this.cfg.appPort),
      APP_PORT: String(this.cfg.appPort),
      GIT_COMMIT: commit,
      GIT_BRANCH: this.cfg.branch,
      DEPLOY_RELEASE: releaseId,
    };
    for (const [k, v] of Object.entries(p.env)) env[k] = v.startsWith('./') ? path.join(appDir, v) : v;
    if (p.projectType === 'dotnet') env.ASPNETCORE_URLS = `http://0.0.0.0:${this.cfg.appPort}`;
    if (p.binDirs?.length) env.PATH = [...p.binDirs.map((d) => path.join(appDir, d)), childEnv().PATH].join(path.delimiter);
    return env;
  }

  async deploy(req: DeployRequest): Promise<void> {
    const s = this.store.state;
    const attempt = ++s.attempts;
    const previous = this.store.currentRelease();
    const timeoutMs = this.cfg.deploymentTimeoutSeconds * 1000;
    const abort = new AbortController();
    const watchdog = setTimeout(
      () => abort.abort(new DeployFailure('deployment_timeout', `the deployment took longer than DEPLOYMENT_TIMEOUT (${this.cfg.deploymentTimeoutSeconds} s)`)),
      timeoutMs,
    );
    const now = this.clock.now();
    const active: Active = { request: req, attempt, stage: 'starting', commit: req.commit, rollbackCommit: previous?.commit ?? null, startedAt: now, stageAt: now, abort };
    this.active = active;
    const blog = new BuildLog(this.logsDir, attempt, this.auth.redact);
    s.in_progress = { attempt, commit: req.commit, dir: null, log_file: blog.file, started_at: new Date(active.startedAt).toISOString(), request: req, pgid: null };
    await this.store.save();

    const stages: Deployment['stages'] = [];
    const signal = abort.signal;
    const stage = async (name: Stage, fn: () => Promise<void>) => {
      signal.throwIfAborted();
      active.stage = name;
      active.stageAt = this.clock.now();
      const t0 = performance.now();
      blog.line(`stage ${name} started`);
      await fn();
      const seconds = Math.round(performance.now() - t0) / 1000;
      stages.push({ stage: name, seconds });
      blog.line(`stage ${name} finished in ${seconds.toFixed(3)} s`);
      this.log.info({ attempt, stage: name, seconds, commit: active.commit }, 'deployment stage done');
    };
    /** Install, build and hooks: as the app's user, in their own process group, tracked for crash recovery. */
    const run = async (cmd: Command, cwd: string, env: Record<string, string>, reason: string, what: string, timeoutMs?: number) => {
      blog.line(`$ ${describe(cmd)}`);
      const res = await runCommand(cmd, {
        cwd,
        env: childEnv({ ...env, DEPLOYER_BUILD: this.cfg.root }, this.who),
        who: this.who,
        log: blog.stream,
        signal,
        timeoutMs,
        onPid: (pid) => {
          s.in_progress!.pgid = pid;
          void this.store.save();
        },
      }).catch((e) => {
        if (signal.aborted) throw e;
        throw new DeployFailure(reason, `${what} could not start: ${(e as Error).message}`);
      });
      if (res.timedOut) throw new DeployFailure(reason, `${what} did not finish within ${Math.round(timeoutMs! / 1000)} s: ${describe(cmd)}`);
      if (res.code !== 0) throw new DeployFailure(reason, `${what} failed (${res.signal ? `signal ${res.signal}` : `exit code ${res.code}`}): ${describe(cmd)}`);
    };

    let dir: string | null = null;
    let appDir = '';
    let commit: string | null = req.commit;
    let message = req.message ?? '';
    let plan: Plan | undefined;
    let appTouched = false;
    let releaseId = '';
    let seq = 0;
    let hash: string | null = null;
    let runCmd: Command | undefined;
    let appEnv: Record<string, string> = {};
    const gitRun = { log: blog.stream, signal, env: childEnv() };
    try {
      await stage('starting', async () => {
        blog.section('Deployment');
        const what = req.tag ? `release tag ${req.tag}` : req.commit ? `commit ${req.commit}` : `head of ${this.cfg.branch}`;
        blog.line(`attempt ${attempt}: ${what} from ${req.provider} (delivery ${req.deliveryId}${req.pusher ? `, pushed by ${req.pusher}` : ''})`);
        blog.line(`rollback target: ${previous ? previous.id : 'none (first deployment)'}`);
      });

      await stage('git_pull', async () => {
        blog.section('Fetching Source');
        const head = await this.git.fetchBranch(gitRun);
        if (req.tag) {
          commit = await this.git.resolveTag(req.tag, gitRun);
          // A release deploys only what the tracked branch holds: a tag on another branch is refused.
          if (!(await this.git.isAncestor(commit, head, gitRun)))
            throw new DeployFailure('not_on_branch', `release tag ${req.tag} names commit ${commit}, which is not on branch ${this.cfg.branch}`);
        } else if (req.commit) {
          try {
            await this.git.checkOnBranch(req.commit, gitRun);
          } catch (e) {
            throw new DeployFailure('not_on_branch', (e as Error).message);
          }
          commit = req.commit;
        } else commit = head;
        active.commit = commit;
        s.in_progress!.commit = commit;
        // Replays and late deliveries never roll the app back: a commit that is live, or an ancestor of the
        // live one, is not deployed. A redeploy request (no commit named) deploys the head even when it is live.
        const explicitRedeploy = req.commit === null && !req.tag && (req.origin ?? 'webhook') === 'webhook';
        if (previous && !explicitRedeploy && (await this.git.isAncestor(commit!, previous.commit, gitRun)))
          throw new Skip(commit === previous.commit ? `commit ${commit} is live already` : `commit ${commit} is older than the live ${previous.commit}; rollback is an operator action`);
        if (!req.message || req.tag) message = (await this.git.subject(commit!, gitRun)) || message;
        seq = s.seq + 1;
        releaseId = `${pad(seq)}-${commit}`;
        dir = path.join(this.releasesDir, releaseId);
        fs.rmSync(dir, { recursive: true, force: true }); // a leftover of an interrupted attempt
        s.in_progress!.dir = dir;
        await this.store.save();
        await this.git.checkout(commit!, dir, gitRun);
        // The checkout's git metadata stays the service's; the files go to the build user.
        fs.rmSync(path.join(dir, '.git'), { recursive: true, force: true });
        await giveTo(dir, this.who);
        blog.line(`checked out ${commit} into ${dir}`);
      });

      await stage('installing_dependencies', async () => {
        blog.section('Installing Dependencies');
        appDir = this.cfg.projectPath ? path.join(dir!, this.cfg.projectPath) : dir!;
        if (!fs.existsSync(appDir) || !fs.statSync(appDir).isDirectory())
          throw new DeployFailure('project_error', `PROJECT_PATH ${this.cfg.projectPath} is not a folder of commit ${commit}`);
        try {
          plan = makePlan(appDir, this.cfg);
        } catch (e) {
          throw e instanceof ProjectError ? new DeployFailure('project_error', e.message) : e;
        }
        appEnv = this.appEnv(commit!, releaseId, appDir, plan);
        blog.line(`project type ${plan.projectType}, serve type ${plan.serveType}${this.cfg.projectPath ? ` in ${this.cfg.projectPath}` : ''}`);
        hash = lockHash(appDir, plan);
        const force = this.cfg.forceInstall || req.forceInstall;
        if (!plan.install) blog.line('no install step for this project');
        else if (!force && hash && previous?.lock_hash === hash && (await this.reuseDeps(previous, appDir, plan.depsDirs, blog)))
          blog.line(`lock files unchanged since release ${previous.id}: dependencies reused, install skipped`);
        else await run(plan.install, appDir, appEnv, 'install_failed', 'dependency install');
      });

      await stage('building', async () => {
        await this.hook('pre-deploy.sh', dir!, appDir, appEnv, blog, run, true);
        blog.section('Building Application');
        blog.line(`release ${previous?.id ?? '(none)'} keeps serving while this builds`);
        if (plan!.build) await run(plan!.build, appDir, appEnv, 'build_failed', 'build');
        else blog.line('no build step for this project');
        try {
          runCmd = plan!.run ?? lateRun(appDir, this.cfg.appPort, plan!.projectType, STATIC_SERVER);
        } catch (e) {
          throw e instanceof ProjectError ? new DeployFailure('build_failed', e.message) : e;
        }
      });

      await stage('stopping_app', async () => {
        appTouched = true;
        if (this.supervisor.status === 'RUNNING' || this.supervisor.release) blog.line(`stopping release ${this.supervisor.release ?? previous?.id}`);
        else blog.line('no app running');
        await this.supervisor.stop();
      });

      await stage('starting_app', async () => {
        blog.section('Starting Application');
        blog.line(`$ ${describe(runCmd!)} (port ${this.cfg.appPort}${this.who ? `, user ${this.who.name}` : ''})`);
        await this.supervisor.start({ release: releaseId, dir: appDir, command: runCmd!, env: this.runEnv(appEnv, plan!) });
      });

      await stage('health_check', async () => {
        blog.section('Health Check');
        if (this.cfg.skipHealthCheck) {
          blog.line('SKIP_HEALTH_CHECK is true: not checked');
          return;
        }
        if (!(await this.healthCheck(blog, signal)))
          throw new DeployFailure('health_check_failed', `the app did not answer on port ${this.cfg.appPort} after ${this.cfg.healthCheckRetries} attempts`);
      });

      await stage('completed', async () => {
        // A failing post-deploy hook is a warning: the release is healthy and stays.
        await this.hook('post-deploy.sh', dir!, appDir, appEnv, blog, run, false);
        const finished = this.clock.now();
        const duration = Math.round((finished - active.startedAt) / 1000);
        const logFile = `${releaseId}.log`;
        const release: Release = {
          id: releaseId, seq, commit: commit!, commit_message: message, build_duration_seconds: duration, deployed_at: isoSeconds(finished),
          dir: dir!, app_dir: appDir, project_type: plan!.projectType, serve_type: plan!.serveType, run: runCmd!, env: this.runEnv(appEnv, plan!),
          lock_hash: hash, deps_dirs: plan!.depsDirs, log_file: logFile,
        };
        s.seq = seq;
        s.current = releaseId;
        s.releases.unshift(release);
        this.prune();
        blog.line(`release ${releaseId} is live`);
        stages.push({ stage: 'completed', seconds: 0 });
        s.history.unshift(this.record(active, 'success', { commit: commit!, message, releaseId, seq, plan: plan!, stages, logFile, finished }));
        await blog.finish(logFile);
        this.log.info({ attempt, release: releaseId, seconds: duration }, 'deployment completed');
      });
    } catch (err) {
      if (err instanceof Skip) {
        await blog.finish(blog.file);
        fs.rmSync(path.join(this.logsDir, blog.file), { force: true });
        s.attempts--; // no attempt was made
        this.log.info({ commit, origin: req.origin ?? 'webhook', delivery: req.deliveryId }, `not deployed: ${err.message}`);
      } else await this.fail(err, { active, blog, previous, appTouched, dir, commit, message, plan, stages });
    } finally {
      clearTimeout(watchdog);
      s.in_progress = null;
      pruneLogs(this.logsDir, s.history);
      // On disk before /status says idle: a service killed right after must find the new release as
      // current (and adopt its app), not an interrupted deployment to redo.
      await this.store.save();
      this.active = null;
    }
  }

  /**
   * `pre-deploy.sh` (after install, before build; failure or timeout fails the deployment) or
   * `post-deploy.sh` (after a healthy start; failure is a warning). Looked up in the app folder, then the
   * repository root; run as the app's user with HOOK_TIMEOUT; output to the build log and logs/hooks.log.
   */
  private async hook(
    name: 'pre-deploy.sh' | 'post-deploy.sh',
    dir: string,
    appDir: string,
    env: Record<string, string>,
    blog: BuildLog,
    run: (cmd: Command, cwd: string, env: Record<string, string>, reason: string, what: string, timeoutMs?: number) => Promise<void>,
    fatal: boolean,
  ): Promise<void> {
    const file = [path.join(appDir, name), path.join(dir, name)].find((f) => fs.existsSync(f) && fs.statSync(f).isFile());
    if (!file) return;
    blog.section(`Hook ${name}`);
    if (this.cfg.skipHooks) {
      blog.line(`SKIP_HOOKS is true: ${name} not run`);
      return;
    }
    fs.chmodSync(file, 0o755);
    const hooksLog = path.join(this.logsDir, 'hooks.log');
    const t0 = Date.now();
    let outcome = 'ok';
    try {
      await run({ argv: [file] }, appDir, { ...env, DEPLOY_HOOK: name }, 'pre_deploy_hook_failed', `hook ${name}`, this.cfg.hookTimeoutSeconds * 1000);
    } catch (e) {
      outcome = (e as Error).message;
      if (fatal || !(e instanceof DeployFailure)) throw e;
      blog.line(`warning: ${outcome} (the release stays live)`);
      this.log.warn({ hook: name, detail: outcome }, 'post-deploy hook failed');
    } finally {
      fs.appendFileSync(hooksLog, `[${new Date().toISOString()}] ${env.DEPLOY_RELEASE} ${name}: ${outcome} (${Date.now() - t0} ms)\n`);
    }
  }

  private runEnv(appEnv: Record<string, string>, p: Plan): Record<string, string> {
    return (p.projectType === 'node' || p.projectType === 'bun') && !process.env.NODE_ENV ? { ...appEnv, NODE_ENV: 'production' } : appEnv;
  }

  private async fail(
    err: unknown,
    c: { active: Active; blog: BuildLog; previous?: Release; appTouched: boolean; dir: string | null; commit: string | null; message: string; plan?: Plan; stages: Deployment['stages'] },
  ): Promise<void> {
    const s = this.store.state;
    const f =
      err instanceof DeployFailure ? err
      : err instanceof GitError ? new DeployFailure('git_failed', err.message)
      : new DeployFailure(this.stopping ? 'interrupted' : 'error', (err as Error)?.message ?? String(err));
    const failedStage = c.active.stage;
    c.blog.section('Deployment Failed');
    c.blog.line(`stage ${failedStage}: ${f.reason}: ${f.message}`);
    this.log.warn({ attempt: c.active.attempt, stage: failedStage, reason: f.reason, detail: this.auth.redact(f.message), commit: c.commit }, 'deployment failed');
    if (c.appTouched) {
      if (this.stopping) await this.supervisor.stop();
      else await this.rollback(c.previous, c.blog);
    } else c.blog.line(`the running release ${c.previous?.id ?? '(none)'} was not touched and keeps serving`);
    if (c.dir) fs.rmSync(c.dir, { recursive: true, force: true });
    const finished = this.clock.now();
    const logFile = `${c.commit ?? `attempt-${c.active.attempt}`}-FAILED.log`;
    // A shutdown is no verdict on the commit: it waits in the pending slot and deploys after the restart.
    if (f.reason !== 'interrupted') {
      s.last_failed = {
        commit: c.commit ? c.commit.slice(0, 7) : '',
        commit_full: c.commit ?? '',
        failed_at: new Date(finished).toISOString(),
        reason: f.reason,
        log: logFile.replace(/\.log$/, ''),
      };
      s.failed_count++;
    }
    s.history.unshift(this.record(c.active, 'failed', { commit: c.commit, message: c.message, plan: c.plan, stages: c.stages, logFile, finished, reason: f.reason, detail: this.auth.redact(f.message) }));
    await c.blog.finish(logFile);
  }

  /** Start the release that ran before the deployment again and check it answers. */
  private async rollback(previous: Release | undefined, blog: BuildLog): Promise<void> {
    blog.section('Rolling Back');
    await this.supervisor.stop();
    if (!previous) {
      blog.line('no previous release: the app stays stopped');
      return;
    }
    if (!fs.existsSync(previous.dir)) {
      blog.line(`release folder ${previous.dir} is gone: cannot roll back`);
      this.log.error({ release: previous.id }, 'rollback impossible: release folder missing');
      return;
    }
    blog.line(`starting release ${previous.id} again`);
    await this.supervisor.start({ release: previous.id, dir: previous.app_dir ?? previous.dir, command: previous.run, env: previous.env });
    const ok = await this.healthCheck(blog);
    blog.line(ok ? `rolled back: release ${previous.id} answers` : `rolled back to ${previous.id}, but it does not answer yet (supervised, restarted if it dies)`);
    this.log.warn({ release: previous.id, answers: ok }, 'rolled back');
  }

  /**
   * HEALTH_CHECK_RETRIES attempts of HEALTH_CHECK_DELAY each: within an attempt the app is probed every
   * 200 ms, so a release that answers goes live at once rather than after a whole delay.
   */
  private async healthCheck(blog: BuildLog, signal?: AbortSignal): Promise<boolean> {
    const { healthCheckRetries: retries, healthCheckDelaySeconds: delay, appPort } = this.cfg;
    for (let i = 1; i <= retries; i++) {
      const end = Date.now() + delay * 1000;
      let ok = false;
      do {
        signal?.throwIfAborted();
        ok = await probe(appPort, Math.max(1000, Math.min(5000, delay * 1000)));
        if (!ok && Date.now() < end) await sleep(Math.min(200, Math.max(0, end - Date.now())), signal);
      } while (!ok && Date.now() < end);
      blog.line(`health check ${i}/${retries}: GET http://127.0.0.1:${appPort}/ ${ok ? 'answered' : `no answer within ${delay} s`}`);
      if (ok) return true;
    }
    return false;
  }

  /** Copy the previous release's dependency folders (hard links: fast, no second copy on disk); false when that fails. */
  private async reuseDeps(previous: Release, appDir: string, depsDirs: string[], blog: BuildLog): Promise<boolean> {
    for (const d of depsDirs) {
      const src = path.join(previous.app_dir ?? previous.dir, d);
      if (!fs.existsSync(src)) continue; // the install made none: nothing to carry over
      fs.mkdirSync(path.dirname(path.join(appDir, d)), { recursive: true });
      const res = await runCommand({ argv: ['cp', '-al', src, path.join(appDir, d)] }, { cwd: appDir, env: childEnv(), log: blog.stream }).catch(() => null);
      if (!res || res.code !== 0) {
        fs.rmSync(path.join(appDir, d), { recursive: true, force: true });
        blog.line(`could not reuse ${d} from release ${previous.id}; installing`);
        return false;
      }
    }
    return true;
  }

  /** Keep the newest KEEP_RELEASES releases (the live one is the newest); older folders are deleted. */
  private prune(): void {
    const s = this.store.state;
    s.releases.sort((a, b) => b.seq - a.seq);
    for (const old of s.releases.splice(this.cfg.keepReleases)) {
      if (old.id === s.current) continue;
      fs.rmSync(old.dir, { recursive: true, force: true });
      this.log.info({ release: old.id }, 'old release removed');
    }
  }

  private record(
    a: Active,
    status: Deployment['status'],
    o: { commit: string | null; message: string; releaseId?: string; seq?: number; plan?: Plan; stages: Deployment['stages']; logFile: string; finished: number; reason?: string; detail?: string },
  ): Deployment {
    return {
      attempt: a.attempt,
      status,
      commit: o.commit,
      commit_message: o.message,
      ...(o.releaseId ? { release_id: o.releaseId, seq: o.seq } : {}),
      ...(o.reason ? { reason: o.reason, detail: o.detail } : {}),
      project_type: o.plan?.projectType,
      serve_type: o.plan?.serveType,
      started_at: isoSeconds(a.startedAt),
      finished_at: isoSeconds(o.finished),
      duration_seconds: Math.round((o.finished - a.startedAt) / 1000),
      stages: [...o.stages],
      log_file: o.logFile,
      delivery_id: a.request.deliveryId,
      provider: a.request.provider,
    };
  }

  /**
   * After a crash: a build the service died in is stopped (its whole process group, if it is still ours),
   * the deployment is logged as interrupted, its folder removed, its request queued again.
   */
  async recover(): Promise<void> {
    const s = this.store.state;
    const ip = s.in_progress;
    if (ip) {
      if (await killLeftover(ip.pgid, this.buildMarker)) this.log.warn({ pgid: ip.pgid }, 'stopped a build a crashed run of the service left running');
      if (ip.dir) fs.rmSync(ip.dir, { recursive: true, force: true });
      const logFile = `${ip.commit ?? `attempt-${ip.attempt}`}-FAILED.log`;
      try {
        fs.appendFileSync(path.join(this.logsDir, ip.log_file), `\n=== Deployment Failed ===\ninterrupted: the service stopped during this deployment (crash)\n`);
        fs.renameSync(path.join(this.logsDir, ip.log_file), path.join(this.logsDir, logFile));
      } catch {
        /* the log was not written yet */
      }
      const now = this.clock.now();
      // Like a clean stop, a crash is no verdict on the commit: it deploys again unless a newer one waits.
      // Only once: a deployment that takes the service down with it must not do so in a loop.
      const again = ip.request && !ip.request.resumed && !s.pending;
      if (again) s.pending = { ...ip.request!, resumed: true };
      s.history.unshift({
        attempt: ip.attempt, status: 'failed', commit: ip.commit, commit_message: '', reason: 'interrupted', detail: 'the service stopped during this deployment',
        started_at: isoSeconds(Date.parse(ip.started_at)), finished_at: isoSeconds(now), duration_seconds: Math.round((now - Date.parse(ip.started_at)) / 1000),
        stages: [], log_file: logFile, delivery_id: '', provider: '',
      });
      s.in_progress = null;
      this.log.warn({ attempt: ip.attempt, commit: ip.commit, queuedAgain: again }, 'a deployment was interrupted by a crash of the service');
    }
    // Folders no release names (leftovers of a crash) go.
    const known = new Set(s.releases.map((r) => path.basename(r.dir)));
    for (const f of fs.readdirSync(this.releasesDir)) if (!known.has(f)) fs.rmSync(path.join(this.releasesDir, f), { recursive: true, force: true });
    await this.store.save();
  }
}
