/**
 * The application as a supervised process (the reference runs it under supervisord): started in its own
 * process group as the unprivileged user, restarted with a growing pause when it dies, stopped group-wide.
 * The spec exposes two states: RUNNING, and STOPPED for everything else (stopped, waiting to restart).
 *
 * The app does not depend on the service staying up: its output goes straight to `app.log` (a file
 * descriptor it inherits, not a pipe that breaks when the service dies), and a pid file names it. A service
 * started again adopts the app still serving (pid file, start time and env marker all match) instead of
 * starting a second copy or leaving it down.
 */
import type { Log } from '../../core/plugin-api.ts';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { childEnv, describe, killGroup, pidAlive, procEnv, procStat, spawnCommand, type Command, type Identity } from './proc.ts';

export interface AppSpec {
  release: string;
  dir: string;
  command: Command;
  env: Record<string, string>;
}

/** What the pid file holds: enough to recognise our app after a restart of the service. */
interface PidFile {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: a pid reused by another process has another start time. */
  start: string;
  release: string;
}

const FIRST_PAUSE_MS = 500;
const MAX_PAUSE_MS = 10_000;
/** A run this long counts as healthy: the next crash restarts after the first pause again. */
const STABLE_MS = 10_000;
/** app.log is cut (copied to app.log.1, then truncated) above this size; checked while the app runs. */
export const MAX_APP_LOG_BYTES = 10 * 1024 * 1024;
const ROTATE_CHECK_MS = 2000;
/** An adopted app is not our child: its exit is seen by polling. */
const ADOPTED_POLL_MS = 250;

export class Supervisor {
  private child?: ChildProcess;
  /** An app a previous run of the service started (not our child). */
  private adopted?: number;
  private adoptTimer?: NodeJS.Timeout;
  private spec?: AppSpec;
  private wanted = false;
  private timer?: NodeJS.Timeout;
  private rotateTimer?: NodeJS.Timeout;
  private pause = FIRST_PAUSE_MS;
  private startedAt = 0;
  restarts = 0;

  constructor(
    private readonly opts: {
      logFile: string;
      pidFile: string;
      log: Log;
      /** Marks our children's env, so a restarted service can tell its own app from a stranger. */
      marker: string;
      who: Identity | null;
      maxLogBytes?: number;
    },
  ) {}

  get status(): 'RUNNING' | 'STOPPED' {
    if (this.adopted) return pidAlive(this.adopted) ? 'RUNNING' : 'STOPPED';
    return this.child && this.child.exitCode === null && this.child.signalCode === null ? 'RUNNING' : 'STOPPED';
  }

  get release(): string | undefined {
    return this.wanted ? this.spec?.release : undefined;
  }

  get pid(): number | undefined {
    return this.adopted ?? this.child?.pid;
  }

  async start(spec: AppSpec): Promise<void> {
    await this.stop();
    this.spec = spec;
    this.wanted = true;
    this.pause = FIRST_PAUSE_MS;
    this.spawn();
    this.watchLog();
  }

  /**
   * Take over the app a previous run left serving `spec.release`: true when the pid file names a live
   * process started at the recorded time whose env carries our marker and that release.
   */
  adopt(spec: AppSpec): boolean {
    const f = this.readPidFile();
    if (!f || f.release !== spec.release) return false;
    const st = procStat(f.pid);
    const env = procEnv(f.pid);
    if (!st || st.state === 'Z' || st.start !== f.start || st.pgrp !== f.pid || !env) return false;
    if (!env.includes(`DEPLOYER_APP=${this.opts.marker}`) || !env.includes(`DEPLOY_RELEASE=${spec.release}`)) return false;
    this.spec = spec;
    this.wanted = true;
    this.adopted = f.pid;
    this.startedAt = Date.now();
    this.opts.log.info({ pid: f.pid, release: spec.release }, 'adopted the app a previous run of the service left serving');
    const poll = () => {
      if (this.adopted !== f.pid) return;
      if (pidAlive(f.pid)) {
        this.adoptTimer = setTimeout(poll, ADOPTED_POLL_MS);
        return;
      }
      this.adopted = undefined;
      void killGroup(f.pid, 1000).then(() => this.scheduleRestart('the adopted app exited'));
    };
    this.adoptTimer = setTimeout(poll, ADOPTED_POLL_MS);
    this.watchLog();
    return true;
  }

  /** Stop an app the pid file names that is ours but not adoptable (another release): no second copy. */
  async stopLeftover(): Promise<void> {
    const f = this.readPidFile();
    if (!f || f.pid === this.pid) return;
    const st = procStat(f.pid);
    const env = procEnv(f.pid);
    if (st && st.start === f.start && env?.includes(`DEPLOYER_APP=${this.opts.marker}`)) {
      this.opts.log.warn({ pid: f.pid, release: f.release }, 'stopping an app a previous run of the service left running');
      await killGroup(f.pid);
    }
  }

  async stop(): Promise<void> {
    this.wanted = false;
    clearTimeout(this.timer);
    clearTimeout(this.adoptTimer);
    clearInterval(this.rotateTimer);
    const pid = this.adopted ?? this.child?.pid;
    this.child = undefined;
    this.adopted = undefined;
    if (pid) {
      await killGroup(pid);
      this.opts.log.info({ pid, release: this.spec?.release }, 'app stopped');
    }
    fs.rmSync(this.opts.pidFile, { force: true });
  }

  private readPidFile(): PidFile | null {
    try {
      const f = JSON.parse(fs.readFileSync(this.opts.pidFile, 'utf8'));
      return Number.isInteger(f.pid) && f.pid > 1 && typeof f.start === 'string' && typeof f.release === 'string' ? f : null;
    } catch {
      return null;
    }
  }

  private spawn(): void {
    const spec = this.spec!;
    let fd: number;
    try {
      fd = fs.openSync(this.opts.logFile, 'a', 0o640);
    } catch (e) {
      this.scheduleRestart(`cannot open ${this.opts.logFile}: ${(e as Error).message}`);
      return;
    }
    fs.writeSync(fd, `\n=== ${new Date().toISOString()} starting release ${spec.release}: ${describe(spec.command)} ===\n`);
    let child: ChildProcess;
    try {
      child = spawnCommand(spec.command, {
        cwd: spec.dir,
        env: childEnv({ ...spec.env, DEPLOYER_APP: this.opts.marker }, this.opts.who),
        who: this.opts.who,
        // The log file itself, not a pipe: the app keeps writing (and serving) if the service dies.
        stdio: ['ignore', fd, fd],
      });
    } catch (e) {
      fs.writeSync(fd, `spawn failed: ${(e as Error).message}\n`);
      fs.closeSync(fd);
      this.scheduleRestart(`spawn failed: ${(e as Error).message}`);
      return;
    }
    fs.closeSync(fd);
    this.child = child;
    this.startedAt = Date.now();
    child.once('error', (e) => this.opts.log.warn({ err: e.message, release: spec.release }, 'app spawn error'));
    if (child.pid) this.writePidFile(child.pid, spec.release);
    this.opts.log.info({ pid: child.pid, release: spec.release, command: describe(spec.command), user: this.opts.who?.name }, 'app started');
    child.once('exit', (code, signal) => {
      if (this.child !== child) return; // stopped on purpose
      this.child = undefined;
      try {
        fs.appendFileSync(this.opts.logFile, `=== exited (code ${code}, signal ${signal}) ===\n`);
      } catch {
        /* log folder gone */
      }
      // Whatever it left running in its group goes too, so the restart finds the port free.
      void killGroup(child.pid, 1000).then(() => this.scheduleRestart(`exited with code ${code}, signal ${signal}`));
    });
  }

  private writePidFile(pid: number, release: string): void {
    const start = procStat(pid)?.start ?? '';
    const tmp = `${this.opts.pidFile}.tmp`;
    try {
      fs.writeFileSync(tmp, JSON.stringify({ pid, start, release } satisfies PidFile));
      fs.renameSync(tmp, this.opts.pidFile);
    } catch (e) {
      this.opts.log.warn({ err: (e as Error).message }, 'could not write the app pid file');
    }
  }

  private scheduleRestart(why: string): void {
    if (!this.wanted) return;
    if (Date.now() - this.startedAt >= STABLE_MS) this.pause = FIRST_PAUSE_MS;
    const pause = this.pause;
    this.pause = Math.min(this.pause * 2, MAX_PAUSE_MS);
    this.opts.log.warn({ release: this.spec?.release, why, restartInMs: pause }, 'app died; restarting');
    this.timer = setTimeout(() => {
      if (!this.wanted || this.child || this.adopted) return;
      this.restarts++;
      this.spawn();
    }, pause);
  }

  /**
   * Rotation while the app runs: the app holds app.log open in append mode, so the file is copied to
   * app.log.1 and truncated in place (the app's next write lands at the new end, offset 0).
   */
  private watchLog(): void {
    clearInterval(this.rotateTimer);
    this.rotateTimer = setInterval(() => this.rotate(), ROTATE_CHECK_MS);
    this.rotateTimer.unref();
  }

  rotate(): boolean {
    const max = this.opts.maxLogBytes ?? MAX_APP_LOG_BYTES;
    try {
      if (fs.statSync(this.opts.logFile).size <= max) return false;
      fs.copyFileSync(this.opts.logFile, `${this.opts.logFile}.1`);
      fs.truncateSync(this.opts.logFile, 0);
      return true;
    } catch {
      return false;
    }
  }
}
