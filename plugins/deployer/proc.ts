/**
 * Child processes: argument vectors for everything the service decides, `sh -c` only for the operator's
 * configured command strings. Each child leads its own process group, so stopping it stops what it spawned.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';

/** A command: an argument vector, or an operator-configured shell string. Never built from webhook input. */
export type Command = { argv: string[] } | { shell: string };

export function describe(cmd: Command): string {
  return 'shell' in cmd ? cmd.shell : cmd.argv.join(' ');
}

/** Env variables the service holds that a deployed app or build must not see. */
const SECRET_ENV = ['WEBHOOK_SECRET', 'API_KEY', 'GIT_TOKEN'];

/** The env children run with: the service's own minus secrets and npm's run-script variables, plus extras. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (SECRET_ENV.includes(k) || k.startsWith('npm_') || k === 'INIT_CWD') continue;
    env[k] = v;
  }
  // The same node runs builds and apps as runs this service.
  env.PATH = [path.dirname(process.execPath), process.env.PATH ?? ''].join(path.delimiter);
  env.GIT_TERMINAL_PROMPT = '0';
  return { ...env, ...extra };
}

export function spawnCommand(cmd: Command, opts: { cwd: string; env: NodeJS.ProcessEnv }): ChildProcess {
  const [file, args] = 'shell' in cmd ? ['/bin/sh', ['-c', cmd.shell]] : [cmd.argv[0], cmd.argv.slice(1)];
  return spawn(file, args, { cwd: opts.cwd, env: opts.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Whether a process of the group still runs. Zombies do not count: an orphaned grandchild stays a zombie
 * until init reaps it (slowly in some containers), yet it holds no port and runs nothing.
 */
function alive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return true; // no /proc: trust the signal probe
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses, so split after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
}

/** SIGTERM the whole group, SIGKILL it after `graceMs`; resolves once no process of the group is left. */
export async function killGroup(pgid: number | undefined, graceMs = 5000): Promise<void> {
  if (!pgid) return;
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-pgid, s);
    } catch {
      /* already gone */
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs;
  while (alive(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  if (alive(pgid)) {
    signal('SIGKILL');
    while (alive(pgid)) await new Promise((r) => setTimeout(r, 25));
  }
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Last bytes of stdout+stderr, for messages. */
  tail: string;
}

/**
 * Run a command to its end, its output appended to `log`. Aborting the signal kills its process group.
 * Resolves with the exit status (it does not throw on a non-zero exit).
 */
export function runCommand(cmd: Command, opts: { cwd: string; env: NodeJS.ProcessEnv; log?: Writable; signal?: AbortSignal }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(opts.signal.reason);
    let child: ChildProcess;
    try {
      child = spawnCommand(cmd, opts);
    } catch (e) {
      return reject(e);
    }
    let tail = '';
    const onData = (b: Buffer) => {
      opts.log?.write(b);
      tail = (tail + b.toString('utf8')).slice(-2000);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    const onAbort = () => void killGroup(child.pid, 2000);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.once('error', (e) => {
      opts.signal?.removeEventListener('abort', onAbort);
      reject(e);
    });
    const closed = new Promise<void>((r) => child.once('close', () => r()));
    child.once('exit', async (code, signal) => {
      // Leftovers of the group (a background job of a build script) do not outlive the step; they may
      // also hold the output pipes open, so wait for those only briefly.
      if (child.pid && alive(child.pid)) await killGroup(child.pid, 1000);
      await Promise.race([closed, new Promise((r) => setTimeout(r, 1000))]);
      opts.signal?.removeEventListener('abort', onAbort);
      if (opts.signal?.aborted) return reject(opts.signal.reason);
      resolve({ code, signal, tail });
    });
  });
}
