/**
 * Starting, restarting and reindexing the daemon: the operator's argument vectors from config, run without
 * a shell (request input never reaches a command line). One control action runs at a time; each waits, within
 * its bound, until the daemon's RPC port says what happened (quiet after a stop, answering after a start).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ApiError } from '../../core/plugin-api.ts';
import { RpcError } from '../../lib/daemon-rpc/rpc.ts';
import type { DaemonService } from './service.ts';
import type { DaemonSettings } from './settings.ts';

export interface Control {
  start(): Promise<{ message: string }>;
  restart(): Promise<{ message: string }>;
  reindex(): Promise<{ message: string }>;
}

const POLL_MS = 250;

export function createControl(settings: DaemonSettings, service: DaemonService, logDir: string): Control {
  let busy = false;
  const logFile = path.join(logDir, 'daemon-control.log');

  /** true: the RPC port answers (a warming-up daemon answers with an error, and counts). */
  async function answers(): Promise<boolean> {
    try {
      await service.call('getblockcount', [], { cache: false, timeoutMs: 2000 });
      return true;
    } catch (e) {
      return e instanceof RpcError && e.kind === 'rpc';
    } finally {
      // A stopping daemon waits until every open RPC connection closes (about 30 s with our kept-alive
      // sockets): a probe must not leave one behind.
      service.closeIdle();
    }
  }

  async function until(want: boolean, ms: number, cancelled = () => false): Promise<boolean> {
    const end = Date.now() + ms;
    for (;;) {
      if ((await answers()) === want) return true;
      if (Date.now() >= end || cancelled()) return false;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  /** Run an argument vector detached (the daemon outlives the node); its output goes to the control log. */
  function run(argv: string[]): Promise<{ code: number | null; up?: boolean }> {
    fs.mkdirSync(logDir, { recursive: true });
    const out = fs.openSync(logFile, 'a');
    return new Promise((resolve, reject) => {
      const child = spawn(argv[0], argv.slice(1), { detached: true, stdio: ['ignore', out, out], shell: false });
      fs.closeSync(out);
      let settled = false;
      child.once('error', (e: NodeJS.ErrnoException) => {
        settled = true;
        reject(new ApiError(500, 'DaemonStartFailed', `Cannot run ${argv[0]}: ${e.code ?? e.message}`));
      });
      child.once('exit', (code) => {
        if (!settled) (settled = true), resolve({ code });
      });
      // A daemon that stays in the foreground is left running; one that forks (-daemon) exits at once.
      child.once('spawn', () => {
        child.unref();
        void until(true, settings.startWaitMs, () => settled).then((up) => {
          if (!settled) (settled = true), resolve({ code: null, up });
        });
      });
    });
  }

  function tail(): string {
    try {
      return fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-3).join(' | ').slice(-400);
    } catch {
      return '';
    }
  }

  /**
   * Run the start command; `retryMs` > 0 (after a stop): a daemon whose RPC port already closed may still
   * hold its data-directory lock for a moment, so a failed start is tried again until that time is up.
   */
  async function startWith(argv: string[], done: string, retryMs = 0): Promise<{ message: string }> {
    const end = Date.now() + retryMs;
    for (;;) {
      const res = await run(argv);
      if (res.code === null || res.code === 0) {
        if (!(res.up ?? (await until(true, settings.startWaitMs))))
          throw new ApiError(504, 'DaemonTimeout', `The daemon did not answer within ${settings.startWaitMs} ms of being started`);
        return { message: done };
      }
      if (Date.now() >= end) throw new ApiError(500, 'DaemonStartFailed', `${argv[0]} exited with code ${res.code}${tail() ? `: ${tail()}` : ''}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  async function stop(): Promise<void> {
    try {
      // The client closes its idle sockets once `stop` is answered (lib/daemon-rpc/client.ts).
      await service.call('stop', [], { cache: false, timeoutMs: 10_000 });
    } catch (e) {
      if (!(e instanceof RpcError && e.kind === 'unreachable')) throw e;
    }
    if (!(await until(false, settings.stopWaitMs)))
      throw new ApiError(504, 'DaemonTimeout', `The daemon still answers ${settings.stopWaitMs} ms after being told to stop`);
  }

  async function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (busy) throw new ApiError(409, 'DaemonControlBusy', 'Another start, restart or reindex of the daemon is in progress');
    busy = true;
    try {
      return await fn();
    } finally {
      busy = false;
    }
  }

  return {
    start: () =>
      exclusive(async () => {
        if (await answers()) throw new ApiError(409, 'DaemonRunning', 'The daemon is already running');
        return startWith(settings.startCommand, 'Daemon successfully started');
      }),
    restart: () =>
      exclusive(async () => {
        if (settings.restartCommand) {
          const res = await run(settings.restartCommand);
          if (res.code !== null && res.code !== 0)
            throw new ApiError(500, 'DaemonStartFailed', `${settings.restartCommand[0]} exited with code ${res.code}${tail() ? `: ${tail()}` : ''}`);
          if (!(res.up ?? (await until(true, settings.startWaitMs))))
            throw new ApiError(504, 'DaemonTimeout', `The daemon did not answer within ${settings.startWaitMs} ms of the restart`);
          return { message: 'Daemon successfully restarted' };
        }
        await stop();
        return startWith(settings.startCommand, 'Daemon successfully restarted', settings.stopWaitMs);
      }),
    reindex: () =>
      exclusive(async () => {
        await stop();
        return startWith([...settings.startCommand, ...settings.reindexArgs], 'Daemon successfully reindexing', settings.stopWaitMs);
      }),
  };
}
