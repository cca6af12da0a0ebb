/**
 * The application as a supervised child process (the reference runs it under supervisord): started in its
 * own process group, restarted with a growing pause when it dies, stopped group-wide. The spec exposes two
 * states: RUNNING, and STOPPED for everything else (stopped, waiting to restart).
 */
import type { Log } from '../../core/plugin-api.ts';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { childEnv, describe, killGroup, spawnCommand, type Command } from './proc.ts';

export interface AppSpec {
  release: string;
  dir: string;
  command: Command;
  env: Record<string, string>;
}

const FIRST_PAUSE_MS = 500;
const MAX_PAUSE_MS = 10_000;
/** A run this long counts as healthy: the next crash restarts after the first pause again. */
const STABLE_MS = 10_000;
const MAX_LOG_BYTES = 10 * 1024 * 1024;

export class Supervisor {
  private child?: ChildProcess;
  private spec?: AppSpec;
  private wanted = false;
  private timer?: NodeJS.Timeout;
  private pause = FIRST_PAUSE_MS;
  private startedAt = 0;
  restarts = 0;

  constructor(
    private readonly opts: {
      logFile: string;
      log: Log;
      /** Marks our children's env, so a restarted service can tell its own orphan from a stranger. */
      marker: string;
      onPid?: (pid: number | null) => void;
    },
  ) {}

  get status(): 'RUNNING' | 'STOPPED' {
    return this.child && this.child.exitCode === null && this.child.signalCode === null ? 'RUNNING' : 'STOPPED';
  }

  get release(): string | undefined {
    return this.wanted ? this.spec?.release : undefined;
  }

  async start(spec: AppSpec): Promise<void> {
    await this.stop();
    this.spec = spec;
    this.wanted = true;
    this.pause = FIRST_PAUSE_MS;
    this.rotateLog();
    this.spawn();
  }

  async stop(): Promise<void> {
    this.wanted = false;
    clearTimeout(this.timer);
    const c = this.child;
    this.child = undefined;
    if (c?.pid) {
      await killGroup(c.pid);
      this.opts.log.info({ pid: c.pid, release: this.spec?.release }, 'app stopped');
    }
    this.opts.onPid?.(null);
  }

  private spawn(): void {
    const spec = this.spec!;
    const out = fs.createWriteStream(this.opts.logFile, { flags: 'a' });
    out.on('error', () => {});
    out.write(`\n=== ${new Date().toISOString()} starting release ${spec.release}: ${describe(spec.command)} ===\n`);
    let child: ChildProcess;
    try {
      child = spawnCommand(spec.command, { cwd: spec.dir, env: childEnv({ ...spec.env, DEPLOYER_APP: this.opts.marker }) });
    } catch (e) {
      out.end(`spawn failed: ${(e as Error).message}\n`);
      this.scheduleRestart(`spawn failed: ${(e as Error).message}`);
      return;
    }
    this.child = child;
    this.startedAt = Date.now();
    child.stdout!.pipe(out, { end: false });
    child.stderr!.pipe(out, { end: false });
    child.once('error', (e) => out.write(`spawn error: ${e.message}\n`));
    child.once('close', () => out.end());
    if (child.pid) this.opts.onPid?.(child.pid);
    this.opts.log.info({ pid: child.pid, release: spec.release, command: describe(spec.command) }, 'app started');
    child.once('exit', (code, signal) => {
      if (this.child !== child) return; // stopped on purpose
      this.child = undefined;
      out.write(`=== exited (code ${code}, signal ${signal}) ===\n`);
      // Whatever it left running in its group goes too, so the restart finds the port free.
      void killGroup(child.pid, 1000).then(() => this.scheduleRestart(`exited with code ${code}, signal ${signal}`));
    });
  }

  private scheduleRestart(why: string): void {
    if (!this.wanted) return;
    if (Date.now() - this.startedAt >= STABLE_MS) this.pause = FIRST_PAUSE_MS;
    const pause = this.pause;
    this.pause = Math.min(this.pause * 2, MAX_PAUSE_MS);
    this.opts.log.warn({ release: this.spec?.release, why, restartInMs: pause }, 'app died; restarting');
    this.timer = setTimeout(() => {
      if (!this.wanted || this.child) return;
      this.restarts++;
      this.spawn();
    }, pause);
  }

  private rotateLog(): void {
    try {
      if (fs.statSync(this.opts.logFile).size > MAX_LOG_BYTES) fs.renameSync(this.opts.logFile, `${this.opts.logFile}.1`);
    } catch {
      /* no log yet */
    }
  }

  /** Stop an app a previous run of the service left behind (it crashed without stopping it). */
  static async reapOrphan(pid: number | null | undefined, marker: string, log: Log): Promise<void> {
    if (!pid) return;
    let environ: string;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8');
    } catch {
      return; // gone, or not ours to read
    }
    if (!environ.split('\0').includes(`DEPLOYER_APP=${marker}`)) return;
    log.warn({ pid }, 'stopping the app a previous run of the service left running');
    await killGroup(pid);
  }
}
