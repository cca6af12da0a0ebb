/**
 * Running the real CLI commands (`npm start`, `npm run corectl`, the build) as child processes, and
 * cleaning up after them even when a test fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../core/paths.ts';
import { processTree } from '../../scripts/lib/process-tree.ts';
import { freePortIn } from '../support/ports.ts';

export { REPO_ROOT };

export interface Done {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Run a command to its end (killed with its whole tree after `timeoutMs`). */
export function run(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<Done> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? REPO_ROOT, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => (stdout += d));
    child.stderr!.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => killTree(child.pid!), opts.timeoutMs ?? 120_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** `npm run corectl -- <args>`, as an operator types it (`-s`: without npm's banner, for --json). */
export function corectl(args: string[], env: Record<string, string>, silent = false): Promise<Done> {
  return run('npm', ['run', ...(silent ? ['-s'] : []), 'corectl', '--', ...args], { env });
}

/** A long-running command whose output is kept for the assertions. */
export class Service {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  exit?: { code: number | null; signal: NodeJS.Signals | null };
  readonly exited: Promise<void>;

  constructor(cmd: string, args: string[], env: Record<string, string>) {
    this.child = spawn(cmd, args, { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (d) => (this.stdout += d));
    this.child.stderr!.on('data', (d) => (this.stderr += d));
    this.exited = new Promise((resolve) => this.child.on('close', (code, signal) => ((this.exit = { code, signal }), resolve())));
  }

  /** Stop whatever is left of the command (test clean-up, also after a failure). */
  kill(): void {
    if (this.child.pid) killTree(this.child.pid);
  }
}

export function killTree(pid: number): void {
  for (const p of processTree(pid).reverse()) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Poll `check` until it returns without throwing; throws its last error after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 30_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

/** The CLI area's ports: 25000-25999. */
export const freePort = () => freePortIn(25000, 25999);

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface Answer {
  status: number;
  json: any;
}

export async function get(url: string): Promise<Answer> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json };
}
