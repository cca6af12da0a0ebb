/**
 * What a testbed is called on the machine: one random prefix (`tb` + 6 hex digits) starts every namespace
 * name and names its folder (`<tmpdir>/<prefix>`, holding `owner`: the pid of the process that made it).
 * `CORENODE_TESTBED_STEM` (lowercase letters) replaces `tb`, so that people sharing a machine can keep to
 * names of their own. `sweepStale()` removes the testbeds of its stem whose owner is gone (a runner killed
 * by SIGKILL runs no exit handler); a testbed whose owner still runs is someone else's and is left alone.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NETNS_DIR, killAllIn, pidsInNetns } from './procs.ts';

const STEM = /^[a-z]{1,12}$/.test(process.env.CORENODE_TESTBED_STEM ?? '') ? process.env.CORENODE_TESTBED_STEM! : 'tb';

export const PREFIX_RE = new RegExp(`^${STEM}[0-9a-f]{6}$`);

export function newPrefix(): string {
  return `${STEM}${randomBytes(3).toString('hex')}`;
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

/** Cgroup folders named for the testbed (its dockerds' `--cgroup-parent`), in every hierarchy (v1 and v2). */
function cgroupsOf(prefix: string): string[] {
  const roots = ['/sys/fs/cgroup'];
  try {
    for (const c of fs.readdirSync('/sys/fs/cgroup')) roots.push(path.join('/sys/fs/cgroup', c));
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const r of roots)
    try {
      for (const d of fs.readdirSync(r)) if (d.startsWith(`${prefix}-`)) found.push(path.join(r, d));
    } catch {
      // not a folder
    }
  return found;
}

/** The cgroup folders under `dir`, deepest first, and the processes in them. */
function walkCgroup(dir: string): { dirs: string[]; pids: number[] } {
  const dirs: string[] = [];
  const pids: number[] = [];
  const walk = (d: string) => {
    let entries: fs.Dirent[] = [];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) walk(path.join(d, e.name));
    dirs.push(d);
    try {
      for (const l of fs.readFileSync(path.join(d, 'cgroup.procs'), 'utf8').split('\n')) if (l) pids.push(Number(l));
    } catch {
      // no procs file
    }
  };
  walk(dir);
  return { dirs, pids };
}

/**
 * Apps' containers: in namespaces of their own (not the testbed's), children of shims a SIGKILL of their
 * dockerd leaves without a parent; found by their cgroup, killed, and the cgroups removed.
 */
function killCgroups(prefix: string): void {
  const groups = cgroupsOf(prefix);
  if (!groups.length) return;
  for (let i = 0; i < 50; i++) {
    const pids = groups.flatMap((g) => walkCgroup(g).pids);
    if (!pids.length) break;
    for (const pid of pids)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    execFileSync('sleep', ['0.1']);
  }
  for (const g of groups)
    for (const d of walkCgroup(g).dirs)
      try {
        fs.rmdirSync(d);
      } catch {
        // still busy or gone
      }
}

/** Mounts under the testbed's folder (dockerd's overlays, app volumes), deepest first, unmounted. */
function unmountUnder(dir: string): void {
  const mounts = fs
    .readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((m): m is string => !!m && (m === dir || m.startsWith(`${dir}/`)))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts)
    try {
      execFileSync('umount', ['-l', m], { stdio: 'ignore' });
    } catch {
      // gone meanwhile
    }
}

/**
 * Remove everything of a testbed, synchronously: the processes in its namespaces (SIGKILL) and in its
 * cgroups, the namespaces (their devices go with them), its mounts, its folder. What a graceful stop did
 * not reach.
 */
export function removeTestbed(prefix: string): void {
  const names = namespacesOf(prefix);
  for (let i = 0; i < 50 && killAllIn(names) + killAll(processesNaming(prefix)) > 0; i++) execFileSync('sleep', ['0.1']);
  killCgroups(prefix);
  unmountUnder(testbedDir(prefix));
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

function killAll(pids: number[]): number {
  for (const pid of pids)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  return pids.length;
}

/** Processes whose command line names the testbed's folder (its forwarders, nodes, daemons). */
export function processesNaming(prefix: string): number[] {
  const dir = testbedDir(prefix);
  const pids: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(`${dir}/`)) pids.push(Number(d));
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
  for (const g of cgroupsOf(prefix)) left.push(`cgroup ${g}`);
  if (fs.existsSync(testbedDir(prefix))) left.push(`folder ${testbedDir(prefix)}`);
  return left;
}
