/**
 * Child processes: argument vectors for everything the service decides, `sh -c` only for the operator's
 * configured command strings. Each child leads its own process group (spawned detached), so stopping it,
 * a timeout or crash recovery stops everything it spawned. When the service runs as root, children run as
 * an unprivileged user (APP_USER), so they can read neither the service's /proc/<pid>/environ (secrets)
 * nor write its state.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';

/** A command: an argument vector, or an operator-configured shell string. Never built from webhook input. */
export type Command = { argv: string[] } | { shell: string };

export function describe(cmd: Command): string {
  return 'shell' in cmd ? cmd.shell : cmd.argv.join(' ');
}

/** Who children run as: null = the service's own user (it is not root, so it cannot drop). */
export interface Identity {
  name: string;
  uid: number;
  gid: number;
  /** HOME of the children: caches of npm, go, cargo, bundler live here, not in the service's home. */
  home: string;
}

/** Env variables the service holds that a deployed app or build must not see. */
const SECRET_ENV = new Set(['WEBHOOK_SECRET', 'API_KEY', 'GIT_TOKEN', 'GIT_USERNAME', 'GIT_REPO_URL']);

/**
 * The env children run with: the service's own minus secrets, npm's run-script variables and the
 * service's settings that name credentials, plus extras.
 */
export function childEnv(extra: Record<string, string> = {}, who: Identity | null = null): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (SECRET_ENV.has(k) || k.startsWith('npm_') || k === 'INIT_CWD' || k.startsWith('GIT_CONFIG')) continue;
    env[k] = v;
  }
  // The same node runs builds and apps as runs this service.
  env.PATH = [path.dirname(process.execPath), process.env.PATH ?? ''].join(path.delimiter);
  env.GIT_TERMINAL_PROMPT = '0';
  if (who) {
    env.HOME = who.home;
    env.USER = env.LOGNAME = who.name;
    delete env.CARGO_HOME; // the service's (root's) cargo home is not the child's
    delete env.RUSTUP_HOME;
  }
  return { ...env, ...extra };
}

/**
 * The unprivileged identity for children when the service runs as root: APP_USER, created as a system user
 * when missing (useradd), else `nobody`. Its HOME is `<root>/home`, owned by it.
 */
export function resolveIdentity(name: string, root: string): Identity | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  const lookup = (n: string) => {
    try {
      const line = execFileSync('getent', ['passwd', n], { encoding: 'utf8' }).trim();
      const f = line.split(':');
      return { name: n, uid: Number(f[2]), gid: Number(f[3]) };
    } catch {
      return null;
    }
  };
  let u = lookup(name);
  if (!u) {
    try {
      execFileSync('useradd', ['--system', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', '--user-group', name], { stdio: 'ignore' });
    } catch {
      /* no useradd, or a race with another service creating it */
    }
    u = lookup(name) ?? lookup('nobody');
  }
  if (!u || u.uid === 0) throw new Error(`APP_USER ${name}: no such user, and it could not be created; builds and the app must not run as root`);
  const home = path.join(root, 'home');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  fs.chownSync(home, u.uid, u.gid);
  return { ...u, home };
}

/** Give a folder (a release checkout) to the children's user (a child process: a big checkout must not block the event loop). */
export function giveTo(dir: string, who: Identity | null): Promise<void> {
  if (!who) return Promise.resolve();
  return new Promise((resolve, reject) =>
    execFile('chown', ['-R', `${who.uid}:${who.gid}`, dir], (err) => (err ? reject(new Error(`chown of ${dir} failed: ${err.message}`)) : resolve())),
  );
}

export function spawnCommand(
  cmd: Command,
  opts: { cwd: string; env: NodeJS.ProcessEnv; who?: Identity | null; stdio?: Array<'ignore' | 'pipe' | number> },
): ChildProcess {
  const [file, args] = 'shell' in cmd ? ['/bin/sh', ['-c', cmd.shell]] : [cmd.argv[0], cmd.argv.slice(1)];
  return spawn(file, args, {
    cwd: opts.cwd,
    env: opts.env,
    detached: true,
    stdio: (opts.stdio ?? ['ignore', 'pipe', 'pipe']) as any,
    ...(opts.who ? { uid: opts.who.uid, gid: opts.who.gid } : {}),
  });
}

/** `pid state ppid pgrp ... starttime(22)`: comm may hold spaces and parentheses, so split after the last ')'. */
export function procStat(pid: number): { state: string; pgrp: number; start: string } | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: f[0], pgrp: Number(f[2]), start: f[19] };
  } catch {
    return null;
  }
}

/** The env of a process (root reads any; null when gone or not readable). */
export function procEnv(pid: number): string[] | null {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    return null;
  }
}

/** A live (not zombie) process with this pid. */
export function pidAlive(pid: number): boolean {
  const s = procStat(pid);
  return s !== null && s.state !== 'Z' && s.state !== 'X';
}

/**
 * Whether a process of the group still runs. Zombies do not count: an orphaned grandchild stays a zombie
 * until init reaps it (slowly in some containers), yet it holds no port and runs nothing.
 */
export function groupAlive(pgid: number): boolean {
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
    const s = procStat(Number(e));
    if (s && s.pgrp === pgid && s.state !== 'Z') return true;
  }
  return false;
}

/** SIGTERM the whole group, SIGKILL it after `graceMs`; resolves once no process of the group is left. */
export async function killGroup(pgid: number | undefined | null, graceMs = 5000): Promise<void> {
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
  while (groupAlive(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
  if (groupAlive(pgid)) {
    signal('SIGKILL');
    const hard = Date.now() + 5000;
    while (groupAlive(pgid) && Date.now() < hard) await new Promise((r) => setTimeout(r, 25));
  }
}

/** Live members of a process group. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const s = procStat(Number(e));
    if (s && s.pgrp === pgid && s.state !== 'Z') out.push(Number(e));
  }
  return out;
}

/**
 * Kill a group a previous run of the service left, only if a member carries our marker (not a stranger
 * reusing the ids). Members, not the leader: `npm run build` dies with the service's pipe, and its
 * children live on in the group.
 */
export async function killLeftover(pgid: number | null | undefined, marker: string): Promise<boolean> {
  if (!pgid) return false;
  if (!groupMembers(pgid).some((pid) => procEnv(pid)?.includes(marker))) return false;
  await killGroup(pgid, 2000);
  return true;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Last bytes of stdout+stderr, for messages. */
  tail: string;
}

/**
 * Run a command to its end, its output appended to `log`. Aborting the signal, or `timeoutMs`, kills its
 * process group. Resolves with the exit status (it does not throw on a non-zero exit); a timeout resolves
 * with `timedOut`.
 */
export function runCommand(
  cmd: Command,
  opts: { cwd: string; env: NodeJS.ProcessEnv; who?: Identity | null; log?: Writable; signal?: AbortSignal; timeoutMs?: number; onPid?: (pid: number | null) => void },
): Promise<RunResult & { timedOut?: boolean }> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(opts.signal.reason);
    let child: ChildProcess;
    try {
      child = spawnCommand(cmd, opts);
    } catch (e) {
      return reject(e);
    }
    if (child.pid) opts.onPid?.(child.pid);
    let tail = '';
    let timedOut = false;
    const onData = (b: Buffer) => {
      opts.log?.write(b);
      tail = (tail + b.toString('utf8')).slice(-2000);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    const onAbort = () => void killGroup(child.pid, 2000);
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          timedOut = true;
          void killGroup(child.pid, 2000);
        }, opts.timeoutMs)
      : undefined;
    child.once('error', (e) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      opts.onPid?.(null);
      reject(e);
    });
    const closed = new Promise<void>((r) => child.once('close', () => r()));
    child.once('exit', async (code, signal) => {
      clearTimeout(timer);
      // Leftovers of the group (a background job of a build script) do not outlive the step; they may
      // also hold the output pipes open, so wait for those only briefly.
      if (child.pid && groupAlive(child.pid)) await killGroup(child.pid, 1000);
      await Promise.race([closed, new Promise((r) => setTimeout(r, 1000))]);
      opts.signal?.removeEventListener('abort', onAbort);
      opts.onPid?.(null);
      if (opts.signal?.aborted) return reject(opts.signal.reason);
      resolve({ code, signal, tail, timedOut });
    });
  });
}
