/**
 * What a testbed is called on the machine: one random prefix (`tb` + 6 hex digits) starts every namespace
 * name and names its folder (`<tmpdir>/<prefix>`, holding `owner`: the pid of the process that made it).
 * `sweepStale()` removes the testbeds whose owner is gone (a runner killed by SIGKILL runs no exit
 * handler); a testbed whose owner still runs is someone else's and is left alone.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NETNS_DIR, killAllIn, pidsInNetns } from './procs.ts';

export const PREFIX_RE = /^tb[0-9a-f]{6}$/;

export function newPrefix(): string {
  return `tb${randomBytes(3).toString('hex')}`;
}

export const testbedDir = (prefix: string) => path.join(os.tmpdir(), prefix);

/** The namespaces of a testbed, as `ip netns` lists them. */
export function namespacesOf(prefix: string): string[] {
  try {
    return fs.readdirSync(NETNS_DIR).filter((n) => n.startsWith(`${prefix}-`));
  } catch {
    return [];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Remove everything of a testbed, synchronously: the processes in its namespaces (SIGKILL), the
 * namespaces (their devices go with them), its folder. What a graceful stop did not reach.
 */
export function removeTestbed(prefix: string): void {
  const names = namespacesOf(prefix);
  for (let i = 0; i < 50 && killAllIn(names) > 0; i++) execFileSync('sleep', ['0.1']);
  for (const ns of names)
    try {
      execFileSync('ip', ['netns', 'delete', ns], { stdio: 'ignore' });
    } catch {
      // deleted meanwhile
    }
  fs.rmSync(testbedDir(prefix), { recursive: true, force: true });
}

/** Testbeds whose owner process is gone (or that have no owner file): removed. Answers their prefixes. */
export function sweepStale(): string[] {
  const prefixes = new Set<string>();
  try {
    for (const n of fs.readdirSync(NETNS_DIR)) if (PREFIX_RE.test(n.split('-')[0])) prefixes.add(n.split('-')[0]);
  } catch {
    // no namespaces at all
  }
  for (const d of fs.readdirSync(os.tmpdir())) if (PREFIX_RE.test(d)) prefixes.add(d);
  const removed: string[] = [];
  for (const p of prefixes) {
    let owner = 0;
    try {
      owner = Number(fs.readFileSync(path.join(testbedDir(p), 'owner'), 'utf8'));
    } catch {
      // no owner file: the folder is written before any namespace, so this one is left over
    }
    if (owner && alive(owner)) continue;
    removeTestbed(p);
    removed.push(p);
  }
  return removed;
}

/** Processes whose command line names the testbed's folder (its forwarders, nodes, daemons). */
export function processesNaming(prefix: string): number[] {
  const dir = testbedDir(prefix);
  const pids: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(dir)) pids.push(Number(d));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * What is left of a testbed: its namespaces, the processes in them or naming its folder, the folder.
 * Empty after a stop.
 */
export function leftovers(prefix: string): string[] {
  const names = namespacesOf(prefix);
  const left = names.map((n) => `namespace ${n}`);
  for (const pid of new Set([...pidsInNetns(names), ...processesNaming(prefix)])) left.push(`process ${pid}`);
  if (fs.existsSync(testbedDir(prefix))) left.push(`folder ${testbedDir(prefix)}`);
  return left;
}
