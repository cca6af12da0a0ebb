/**
 * A Syncthing left running by a node killed with -9 is stopped before the node's own starts
 * (plugins/filesync/orphans.ts): here a stand-in process with the same command line shape, detached in a
 * process group of its own as Syncthing puts itself.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { servingHome, stopOrphans } from '../../plugins/filesync/orphans.ts';
import { eventually } from '../support/wait.ts';

describe('filesync: an orphaned Syncthing of the home', function () {
  this.timeout(30_000);
  it('is found by its home and stopped; another home is left alone', async function () {
    if (process.platform !== 'linux') return this.skip();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'orphans-'));
    const home = path.join(dir, 'home');
    const other = path.join(dir, 'other');
    const standIn = (h: string) => spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'serve', `--home=${h}`], { detached: true, stdio: 'ignore' });
    const a = standIn(home);
    const b = standIn(other);
    try {
      await eventually(() => servingHome(home).includes(a.pid!), { what: 'the stand-in listed', everyMs: 50 });
      assert.deepEqual(await stopOrphans(home), [a.pid]);
      await eventually(() => a.exitCode !== null || a.signalCode !== null, { what: 'the orphan gone', everyMs: 50 });
      assert.deepEqual(servingHome(other), [b.pid]);
    } finally {
      a.kill('SIGKILL');
      b.kill('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
