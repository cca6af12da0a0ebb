/**
 * Runs the node's own Syncthing and keeps it running: `syncthing serve --no-restart` as one child process
 * (Syncthing's own monitor process is kept out, so the node supervises Syncthing itself); an exit is followed by a new start after a back-off (1 s doubling to 30 s; exit code 3, a
 * restart Syncthing asked for, at once). `stop()` sends SIGTERM and SIGKILL after 10 s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Log } from '../../core/plugin-api.ts';
import { prepareHome, type HomeOptions } from './home.ts';
import { stopOrphans } from './orphans.ts';

export class Supervisor {
  private child: ChildProcess | null = null;
  private stopping = false;
  private backoffMs = 1000;
  private timer: NodeJS.Timeout | null = null;
  /** A start is preparing the home or stopping an orphan: a second one would race it. */
  private starting = false;
  /** Why the last start failed, for the fitness check's message. */
  lastError = '';
  starts = 0;
  /** Starts that failed: home not prepared, binary not spawned, an exit other than Syncthing's own restart (3). */
  failures = 0;
  /**
   * Times Syncthing's GUI and API listener started, counted from its log line "GUI and API listening on":
   * Syncthing restarts that listener after each GUI change, after answering the change, so only this
   * count tells a listener that is about to close from the new one.
   */
  apiStarts = 0;
  private apiWaiters: (() => void)[] = [];

  constructor(
    private readonly o: HomeOptions,
    private readonly log: Log,
  ) {}

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.running ? this.child!.pid : undefined;
  }

  async start(): Promise<void> {
    if (this.stopping || this.running || this.starting) return;
    this.starting = true;
    try {
      await this.spawnOne();
    } finally {
      this.starting = false;
    }
  }

  private async spawnOne(): Promise<void> {
    try {
      await prepareHome(this.o);
    } catch (e) {
      this.lastError = `preparing ${this.o.home}: ${(e as Error).message}`;
      this.failures++;
      this.log.warn({ err: this.lastError }, 'filesync: Syncthing home could not be prepared');
      return this.again();
    }
    if (this.stopping) return;
    // Not ours (this.child is not running here): one left by this node killed with -9 (orphans.ts).
    const orphans = await stopOrphans(this.o.home);
    if (orphans.length) this.log.warn({ pids: orphans }, 'filesync: stopped a Syncthing of this home left running by an earlier run of the node');
    if (this.stopping || this.running) return;
    const child = spawn(
      this.o.binary,
      ['serve', `--home=${this.o.home}`, '--no-browser', '--no-restart', '--no-upgrade', '--skip-port-probing', `--gui-address=http://127.0.0.1:${this.o.guiPort}`, '--logflags=0'],
      // STMONITORED: Syncthing 1.19 forks a monitor process even with --no-restart unless told it is
      // monitored already (measured: two `syncthing serve` processes without it, one with it).
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, STNODEFAULTFOLDER: '1', STNOUPGRADE: '1', STNORESTART: '1', STMONITORED: 'yes' } },
    );
    this.child = child;
    this.starts++;
    let tail = '';
    child.stderr!.on('data', (b: Buffer) => (tail = (tail + b.toString()).slice(-2000)));
    let line = '';
    child.stdout!.on('data', (b: Buffer) => {
      const lines = (line + b.toString()).split('\n');
      line = lines.pop()!.slice(-2000);
      for (const l of lines) if (l.includes('GUI and API listening on')) this.apiStarted();
    });
    child.on('error', (e) => {
      this.lastError = `${this.o.binary}: ${e.message}`;
      this.failures++;
      // A binary that could not be spawned (missing, not executable) may never emit 'close': try again later.
      if (child.pid === undefined && this.child === child) {
        this.child = null;
        this.again();
      }
    });
    const startedAt = Date.now();
    child.on('close', (code, signal) => {
      if (child.pid === undefined) return;
      if (this.child === child) this.child = null;
      if (this.stopping) return;
      if (!this.lastError || code !== null) this.lastError = `Syncthing exited (${signal ?? code})${tail ? `: ${tail.trim().split('\n').pop()}` : ''}`;
      this.log.warn({ code, signal }, 'filesync: Syncthing exited; starting it again');
      if (Date.now() - startedAt > 60_000) this.backoffMs = 1000;
      if (code === 3) return void this.start();
      this.failures++;
      this.again();
    });
  }

  private apiStarted(): void {
    this.apiStarts++;
    for (const w of this.apiWaiters.splice(0)) w();
  }

  /** Resolves true once the API listener started more than `starts` times, false after `ms`. */
  async apiStartedAfter(starts: number, ms: number): Promise<boolean> {
    const end = Date.now() + ms;
    while (this.apiStarts <= starts) {
      const left = end - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const woken = () => (clearTimeout(t), resolve());
        // On time out the waiter leaves the list, so waits that end unanswered do not pile up.
        const t = setTimeout(() => {
          const i = this.apiWaiters.indexOf(woken);
          if (i >= 0) this.apiWaiters.splice(i, 1);
          resolve();
        }, left);
        this.apiWaiters.push(woken);
      });
    }
    return true;
  }

  private again(): void {
    if (this.stopping) return;
    this.timer = setTimeout(() => void this.start(), this.backoffMs);
    this.timer.unref();
    this.backoffMs = Math.min(this.backoffMs * 2, 30_000);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    child.kill('SIGTERM');
    const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await closed;
    clearTimeout(kill);
  }
}
