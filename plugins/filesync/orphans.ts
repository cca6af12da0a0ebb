/**
 * A Syncthing left running by a node that was killed with -9: Syncthing moves itself into a process group
 * of its own about 2 s after it starts (measured), so killing the node's process group leaves it running
 * under pid 1, holding the home's database lock and the API port. The restarted node's own Syncthing then
 * exits at once ("is another instance of Syncthing running?"), for ever, while the health check is
 * answered by the orphan. Before each start the supervisor stops any process serving this home.
 */
import fs from 'node:fs';

/** Pids of processes whose command line is `… serve … --home=<home> …` (Linux /proc; none elsewhere). */
export function servingHome(home: string): number[] {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const want = `--home=${home}`;
  const out: number[] = [];
  for (const e of entries) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    let argv: string[];
    try {
      argv = fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile, or not ours to read
    }
    if (argv.includes('serve') && argv.includes(want)) out.push(Number(e));
  }
  return out;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Stop the processes serving `home` (SIGTERM, SIGKILL after `graceMs`); answers the pids stopped. */
export async function stopOrphans(home: string, graceMs = 5000): Promise<number[]> {
  const pids = servingHome(home);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* gone already */
    }
  }
  const end = Date.now() + graceMs;
  while (pids.some(alive) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
  for (const pid of pids.filter(alive)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone already */
    }
  }
  return pids;
}
