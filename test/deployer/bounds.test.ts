/**
 * Bounds: build logs keep their tail past a cap (marked), app.log rotates by size while the app runs and
 * keeps writing, and a continuous stream of pushes still deploys (the debounce has a maximum wait).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pino } from 'pino';
import { BuildLog } from '../../plugins/deployer/logs.ts';
import { DeployQueue, type DeployRequest } from '../../plugins/deployer/queue.ts';
import { Supervisor } from '../../plugins/deployer/supervisor.ts';
import { freePort, tempDir, waitFor } from './support.ts';

describe('deployer bounds', function () {
  this.timeout(30_000);
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('a build log past its cap keeps the tail behind a line that says what was cut', async () => {
    const dir = tempDir('deployer-logs-');
    dirs.push(dir);
    const log = new BuildLog(dir, 1, (s) => s.replaceAll('tok-123', '***'), 64 * 1024);
    log.line('first line');
    for (let i = 0; i < 5000; i++) log.stream.write(`output line ${i} tok-123\n`);
    log.line('last line');
    await log.finish('x-FAILED.log');
    const text = fs.readFileSync(path.join(dir, 'x-FAILED.log'), 'utf8');
    assert.ok(text.length <= 64 * 1024, `${text.length} bytes`);
    assert.match(text.split('\n')[0], /^\[\.\.\. \d+ bytes of earlier output cut: build logs keep their last 32 KiB \.\.\.\]$/);
    assert.match(text, /output line 4999 \*\*\*\n.*last line\n$/);
    assert.doesNotMatch(text, /first line|tok-123/);
    // Whole lines only after the mark.
    assert.match(text.split('\n')[1], /^output line \d+ \*\*\*$/);
  });

  it('app.log rotates by size while the app runs, and the app keeps writing to it', async () => {
    const dir = tempDir('deployer-applog-');
    dirs.push(dir);
    const logFile = path.join(dir, 'app.log');
    const sup = new Supervisor({ logFile, pidFile: path.join(dir, 'app.pid'), log: pino({ level: 'silent' }), marker: dir, who: null, maxLogBytes: 64 * 1024 });
    const port = await freePort();
    await sup.start({
      release: '001-x',
      dir,
      command: { argv: [process.execPath, '-e', `let i = 0; setInterval(() => console.log('line ' + (i++) + ' ' + 'x'.repeat(200)), 2); require('http').createServer((q, s) => s.end('ok')).listen(${port})`] },
      env: {},
    });
    try {
      await waitFor(() => fs.existsSync(`${logFile}.1`), 'a rotation', 20_000);
      const pid = sup.pid;
      const size = fs.statSync(logFile).size;
      await waitFor(() => fs.statSync(logFile).size > size + 1000, 'the app writing after the rotation');
      const tail = fs.readFileSync(logFile, 'utf8');
      assert.ok(fs.statSync(logFile).size < 64 * 1024 * 4, 'bounded');
      assert.match(tail, /line \d+ x+/);
      assert.equal(sup.pid, pid, 'the app was not restarted');
      assert.equal(sup.status, 'RUNNING');
    } finally {
      await sup.stop();
    }
  });

  it('a continuous stream of pushes still deploys: the debounce waits at most its maximum', async () => {
    const started: string[] = [];
    const q = new DeployQueue({
      debounceMs: 200,
      maxWaitMs: 600,
      run: async (r: DeployRequest) => void started.push(r.commit!),
    });
    const t0 = Date.now();
    let n = 0;
    // A push every 50 ms, for longer than the maximum wait: each one alone would restart the 200 ms timer.
    while (!started.length && Date.now() - t0 < 5000) {
      q.submit({ commit: `c${n++}`, provider: 'github', deliveryId: String(n), receivedAt: Date.now() });
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(started.length >= 1, 'nothing deployed during the stream');
    assert.ok(n < 60, `${n} pushes before the first deployment`);
    await q.close();
  });
});
