/**
 * Processes inside the testbed's network namespaces: started with `nsenter --net=/run/netns/<ns> --`
 * (iproute2's `ip netns exec` remounts /sys in a mount namespace of its own, which dockerd then fails on),
 * each the leader of its own process group, so that one signal reaches what it started too (a wrapper
 * that forks the program it wraps, as Debian's `faketime` command does, would otherwise leave that program
 * running after a SIGKILL to the wrapper alone: seen). `pidsInNetns` finds whatever still runs in a namespace however it was started, for the
 * final sweep.
 */
import { execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const NETNS_DIR = '/run/netns';

/** The argv prefix that runs a program in namespace `ns`. */
export const inNs = (ns: string) => ['nsenter', `--net=${path.join(NETNS_DIR, ns)}`, '--'];

/** Run a command in namespace `ns` and wait for it; throws with its stderr when it fails. */
export function execIn(ns: string, args: string[], opts: { input?: string } = {}): string {
  const [cmd, ...rest] = [...inNs(ns), ...args];
  try {
    return execFileSync(cmd, rest, { input: opts.input, stdio: ['pipe', 'pipe', 'pipe'], encoding: 'utf8' });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`in ${ns}: ${args.join(' ')}: ${(err.stderr || err.message).trim()}`);
  }
}

/** `ip` run from the runner's namespace on a namespace's devices (`ip -n <ns> ...`). */
export function ip(...args: string[]): string {
  try {
    return execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')}: ${(err.stderr || err.message).trim()}`);
  }
}

/** A process started in a namespace as its own process group. */
export interface NsProcess {
  child: ChildProcess;
  /** Resolves once it exited (with its code or signal). */
  exited: Promise<void>;
  running(): boolean;
  /** Signal the whole group (the program and what it forked). */
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it is gone. */
  stop(graceMs?: number): Promise<void>;
}

export function spawnIn(ns: string, args: string[], opts: SpawnOptions = {}): NsProcess {
  const [cmd, ...rest] = [...inNs(ns), ...args];
  const child = spawn(cmd, rest, { stdio: 'ignore', ...opts, detached: true });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.once('error', () => resolve());
  });
  const running = () => child.exitCode === null && child.signalCode === null && child.pid !== undefined;
  const p: NsProcess = {
    child,
    exited,
    running,
    signal(sig) {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // the group is gone already
      }
    },
    async stop(graceMs = 10_000) {
      if (!running()) {
        // The leader is gone; what it forked may not be (a wrapper's child after a kill of the wrapper).
        p.signal('SIGKILL');
        return;
      }
      p.signal('SIGTERM');
      const t = setTimeout(() => p.signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(t);
      p.signal('SIGKILL');
    },
  };
  return p;
}

/** Wait for a line of a child's stdout that matches `re`; fails when it exits first or after `ms`. */
export function lineOf(p: NsProcess, re: RegExp, what: string, ms = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    const done = (e?: Error, line?: string) => {
      clearTimeout(t);
      p.child.stdout?.off('data', onData);
      p.child.off('exit', onExit);
      if (e) reject(e);
      else resolve(line!);
    };
    const onData = (d: Buffer) => {
      buf += d;
      const line = buf.split('\n').find((l) => re.test(l));
      if (line !== undefined) done(undefined, line);
    };
    const onExit = (code: number | null) => done(new Error(`${what} exited (${code}) before it was ready: ${buf.slice(-500)}`));
    const t = setTimeout(() => done(new Error(`${what} not ready after ${ms} ms: ${buf.slice(-500)}`)), ms);
    p.child.stdout?.on('data', onData);
    p.child.once('exit', onExit);
  });
}

/** The (device, inode) of a network namespace file, as `/proc/<pid>/ns/net` shows it. */
function nsId(file: string): string | null {
  try {
    const s = fs.statSync(file);
    return `${s.dev}:${s.ino}`;
  } catch {
    return null;
  }
}

/** Every process whose network namespace is one of `names` (the final sweep: nothing of a testbed runs on). */
export function pidsInNetns(names: string[]): number[] {
  const ids = new Set(names.map((n) => nsId(path.join(NETNS_DIR, n))).filter((x): x is string => !!x));
  if (!ids.size) return [];
  const pids: number[] = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const id = nsId(`/proc/${d}/ns/net`);
    if (id && ids.has(id) && Number(d) !== process.pid) pids.push(Number(d));
  }
  return pids;
}

/** SIGKILL every process in the namespaces (synchronous: also used by the exit handler). */
export function killAllIn(names: string[]): number {
  const pids = pidsInNetns(names);
  for (const pid of pids)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  return pids.length;
}
