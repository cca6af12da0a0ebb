/**
 * A skewed clock for a node process: Debian's libfaketime preloaded into it (`LD_PRELOAD`, `FAKETIME`: what
 * the `faketime` command sets, without that command's extra process). libfaketime keeps a shared-memory file
 * and a semaphore per process in /dev/shm (`faketime_shm_<pid>`, `sem.faketime_sem_<pid>`) and removes them
 * only when the process exits normally: after a kill -9 they stay (36 were left after a day of test runs),
 * so whoever starts a skewed process calls `forgetSkew(pid)` once it is gone.
 */
import fs from 'node:fs';

/** Debian's libfaketime (package faketime; scripts/setup/ensure-faketime.sh installs it). */
export const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';

/** The environment that runs a process `seconds` ahead (negative: behind). */
export function skewEnv(seconds: number): Record<string, string> {
  if (!fs.existsSync(LIBFAKETIME)) throw new Error(`${LIBFAKETIME} is missing: bash scripts/setup/ensure-faketime.sh installs it`);
  return { LD_PRELOAD: LIBFAKETIME, FAKETIME: `${seconds >= 0 ? '+' : '-'}${Math.abs(seconds)}s` };
}

/** Remove what libfaketime kept in /dev/shm for the process `pid`, which has exited. */
export function forgetSkew(pid: number | undefined): void {
  if (!pid) return;
  for (const f of [`/dev/shm/faketime_shm_${pid}`, `/dev/shm/sem.faketime_sem_${pid}`]) fs.rmSync(f, { force: true });
}
