/**
 * The processes a command leaves running, read from /proc (Linux): used by `npm run bench:start` and the
 * real-process tests of the CLI entry points (test/cli) to count what `npm start` leaves and what each
 * process holds in memory.
 */
import fs from 'node:fs';

export interface Proc {
  pid: number;
  ppid: number;
  /** Resident set size in bytes. */
  rss: number;
  /** CPU time used so far (user + system), in ms. */
  cpuMs: number;
  /** The command line, arguments joined by spaces. */
  args: string;
}

const PAGE = 4096;
const TICK_MS = 10; // USER_HZ is 100 on Linux

/** One process, or undefined when it has exited. */
export function readProc(pid: number): Proc | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: the fields after it start at the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (f[0] === 'Z') return undefined; // exited, not yet reaped
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return { pid, ppid: Number(f[1]), rss: Number(f[21]) * PAGE, cpuMs: (Number(f[11]) + Number(f[12])) * TICK_MS, args };
  } catch {
    return undefined;
  }
}

/** `root` and every live descendant, parents before children. */
export function processTree(root: number): Proc[] {
  const all: Proc[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const p = readProc(Number(name));
    if (p) all.push(p);
  }
  const out: Proc[] = [];
  const add = (pid: number) => {
    const p = all.find((x) => x.pid === pid);
    if (!p) return;
    out.push(p);
    for (const c of all.filter((x) => x.ppid === pid)) add(c.pid);
  };
  add(root);
  return out;
}

/** A short name for a process: the program and the last path it was given (`npm start` as is). */
export function describe(p: Proc): string {
  const words = p.args.split(' ');
  const prog = words[0].split('/').pop() ?? words[0];
  const target = words.slice(1).reverse().find((w) => !w.startsWith('-') && /[/.]/.test(w));
  return target ? `${prog} ${target.replace(/^.*\/node_modules\//, 'node_modules/')}` : p.args.slice(0, 60);
}
