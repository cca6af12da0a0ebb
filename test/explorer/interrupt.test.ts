/**
 * Ctrl-C or a `kill` of a test run's mocha process stops the daemons it started: found when a SIGTERM to
 * mocha alone left its litecoind and dockerd running, and Ctrl-C left every PostgreSQL (pg_ctl gives the
 * server a session of its own, so the terminal's SIGINT never reaches it). test/support/at-exit.ts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
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
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    it(`${signal} to the mocha process alone stops its PostgreSQL and litecoind and removes their folders`, async () => {
      // mocha's own CLI module, as `npx mocha` runs it (the npx and bin wrappers would take the signal instead).
      const child = spawn(process.execPath, ['--import=tsx', 'node_modules/mocha/lib/cli/cli.js', 'test/explorer/interrupt-fixture.ts'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      let daemons: { pgPid: number; ltcPid: number; ltcDir: string } | undefined;
      try {
        const ready = await eventually(() => out.match(/^READY (.*)$/m)?.[1], { what: `the fixture's daemons (${out.slice(-500)})`, timeoutMs: 90_000 });
        daemons = JSON.parse(ready) as { pgPid: number; ltcPid: number; ltcDir: string };
        const { pgPid, ltcPid, ltcDir } = daemons;
        assert.ok(alive(pgPid) && alive(ltcPid));
        child.kill(signal);
        assert.equal(await exited, signal === 'SIGINT' ? 130 : 143, out.slice(-2000));
        await eventually(() => !alive(pgPid) && !alive(ltcPid), { what: 'PostgreSQL and litecoind gone', timeoutMs: 30_000 });
        assert.ok(!fs.existsSync(ltcDir), 'the daemon folder is removed');
      } finally {
        child.kill('SIGKILL');
        // Failed: what the fixture left is this test's to stop.
        for (const pid of daemons ? [daemons.pgPid, daemons.ltcPid] : []) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
    });
});
