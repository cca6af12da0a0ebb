/**
 * Ctrl-C or a `kill` of a test run's mocha process stops the daemons it started: found when a SIGTERM to
 * mocha alone left its litecoind and dockerd running, and Ctrl-C left every PostgreSQL (pg_ctl gives the
 * server a session of its own, so the terminal's SIGINT never reaches it). test/support/at-exit.ts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { eventually } from '../support/wait.ts';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    // A zombie has exited: only its parent has not collected it yet.
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('an interrupted test run leaves no daemon behind', function () {
  this.timeout(120_000);
  const cases = [
    // mocha's own CLI module, as `npx mocha` ends up running it, signalled alone.
    { what: 'SIGINT to the mocha process alone', signal: 'SIGINT', code: 130, group: false },
    { what: 'SIGTERM to the mocha process alone', signal: 'SIGTERM', code: 143, group: false },
    // A terminal's Ctrl-C: SIGINT to the whole process group of `npx mocha`, whose launcher then sends its
    // child SIGINT and SIGTERM as well (with `once` listeners the second signal ended the cleanups halfway).
    { what: 'Ctrl-C of `npx mocha` (SIGINT to its process group)', signal: 'SIGINT', code: null, group: true },
  ] as const;
  for (const c of cases)
    it(`${c.what} stops its PostgreSQL and litecoind and removes their folders`, async () => {
      const [cmd, args] = c.group ? ['npx', ['--no-install', 'mocha', 'test/explorer/interrupt-fixture.ts']] : [process.execPath, ['--import=tsx', 'node_modules/mocha/lib/cli/cli.js', 'test/explorer/interrupt-fixture.ts']];
      const child = spawn(cmd, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: c.group });
      const signal = c.signal;
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      let daemons: { pgPid: number; ltcPid: number; ltcDir: string } | undefined;
      try {
        const ready = await eventually(() => out.match(/^READY (.*)$/m)?.[1], { what: "the fixture's daemons", timeoutMs: 90_000 }).catch((e: Error) => {
          throw new Error(`${e.message}; the fixture wrote: ${out.slice(-1500)}`);
        });
        daemons = JSON.parse(ready) as { pgPid: number; ltcPid: number; ltcDir: string };
        const { pgPid, ltcPid, ltcDir } = daemons;
        assert.ok(alive(pgPid) && alive(ltcPid));
        // The server's folder, from its command line (`-D <folder>/data`).
        const argv = fs.readFileSync(`/proc/${pgPid}/cmdline`, 'utf8').split('\0');
        const pgDir = path.dirname(argv[argv.indexOf('-D') + 1]);
        assert.match(pgDir, /explorer-pg-/);
        if (c.group) process.kill(-child.pid!, signal);
        else child.kill(signal);
        const code = await exited;
        if (c.code !== null) assert.equal(code, c.code, out.slice(-2000));
        await eventually(() => !alive(pgPid) && !alive(ltcPid), { what: 'PostgreSQL and litecoind gone', timeoutMs: 30_000 });
        assert.ok(!fs.existsSync(ltcDir), "litecoind's folder is removed");
        assert.ok(!fs.existsSync(pgDir), "PostgreSQL's folder is removed");
      } finally {
        if (c.group) {
          try {
            process.kill(-child.pid!, 'SIGKILL');
          } catch {}
        } else child.kill('SIGKILL');
        // Failed: what the fixture left is this test's to stop.
        for (const pid of daemons ? [daemons.pgPid, daemons.ltcPid] : []) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
    });
});
