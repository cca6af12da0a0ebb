/**
 * Last-resort cleanup of what a test process started outside itself, when the process ends without its
 * `after` hooks: a failed run's `exit`, and Ctrl-C (SIGINT) or a `kill` (SIGTERM) of the mocha process.
 * Without a handler those signals end the process at once and run no `exit` listener: a PostgreSQL that
 * `pg_ctl` daemonised (its own session, so Ctrl-C does not reach it) and, after a SIGTERM to mocha alone,
 * every dockerd and litecoind the run started kept running.
 *
 * Cleanups are synchronous (an `exit` listener cannot wait) and run once each, latest first.
 */
const cleanups = new Set<() => void>();
let installed = false;

function runAll() {
  for (const fn of [...cleanups].reverse()) {
    cleanups.delete(fn);
    try {
      fn();
    } catch {
      // the others still run
    }
  }
}

/** Run `fn` when this process ends, however it ends short of SIGKILL; the returned function forgets it (a normal stop). */
export function atExit(fn: () => void): () => void {
  if (!installed) {
    installed = true;
    process.once('exit', runAll);
    // 128 + the signal's number, as a shell reports a process the signal ended. The listeners stay: mocha's
    // own launcher forwards a Ctrl-C as SIGINT then SIGTERM, and a signal arriving with no listener left
    // ended the process halfway through the cleanups (a PostgreSQL stayed up).
    process.on('SIGINT', () => process.exit(130));
    process.on('SIGTERM', () => process.exit(143));
  }
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}
