/**
 * Running configured argument vectors (no shell) and keeping control actions one at a time. A command's
 * output is kept to its last 64 KB for the answer and appended to the node's control log.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ApiError } from '../../core/plugin-api.ts';

const KEEP = 64 * 1024;

export interface RunResult {
  code: number | null;
  output: string;
}

export interface RunOptions {
  cwd?: string;
  timeoutMs: number;
  /** Appended with each command line and its output. */
  logFile?: string;
  env?: NodeJS.ProcessEnv;
}

/** Run one argument vector to its end; a missing binary or a timeout is a clear ApiError. */
export function runArgv(argv: string[], opts: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    let output = '';
    const child = spawn(argv[0], argv.slice(1), { cwd: opts.cwd, shell: false, stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env });
    const keep = (d: Buffer) => {
      output = (output + d.toString('utf8')).slice(-KEEP);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    let timedOut = false;
    timer.unref();
    child.once('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new ApiError(500, 'CommandFailed', `Cannot run ${argv[0]}: ${e.code ?? e.message}`));
    });
    // 'close', not 'exit': a process can exit before its output has been read, and under load `git
    // rev-parse` then answered an empty branch name (DetachedHead, seen at load 26).
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL') timedOut = true;
      if (opts.logFile) {
        try {
          fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
          fs.appendFileSync(opts.logFile, `${new Date().toISOString()} ${JSON.stringify(argv)} exit ${code ?? signal}\n${output}\n`);
        } catch {
          /* the answer still says what happened */
        }
      }
      if (timedOut) return reject(new ApiError(504, 'CommandTimeout', `${argv[0]} did not finish within ${opts.timeoutMs} ms`));
      resolve({ code, output });
    });
  });
}

/** Run, and fail with the command's last output lines when it does not exit 0. */
export async function mustRun(argv: string[], opts: RunOptions): Promise<string> {
  const res = await runArgv(argv, opts);
  if (res.code !== 0) {
    const last = res.output.trim().split('\n').slice(-5).join(' | ').slice(-600);
    throw new ApiError(500, 'CommandFailed', `${argv.slice(0, 3).join(' ')} exited with code ${res.code}${last ? `: ${last}` : ''}`);
  }
  return res.output;
}

/** One control action at a time on this node: a second one is refused at once, never queued. */
export function oneAtATime() {
  let running: string | null = null;
  return async function exclusive<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (running) throw new ApiError(409, 'ControlBusy', `Another control action (${running}) is in progress; try again when it has finished`);
    running = what;
    try {
      return await fn();
    } finally {
      running = null;
    }
  };
}

/** Poll `probe` until it gives `want` or `ms` pass. */
export async function until(probe: () => Promise<boolean>, want: boolean, ms: number, stepMs = 250): Promise<boolean> {
  const end = Date.now() + ms;
  for (;;) {
    if ((await probe()) === want) return true;
    if (Date.now() >= end) return false;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
