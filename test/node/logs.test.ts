/**
 * The log routes: the node's own level files (written by the host, rotated by size), downloads and tails,
 * the daemon's debug.log found from its conf (a real regtest litecoind), the benchmark daemon's from its
 * folders, and the tail of a 1 GB file read from its end.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { tailLines } from '../../plugins/node/tail.ts';
import { CORE_TEAM, MEMBER, asOperator, authAs, err, ok, startOpsNode, tmp, waitFor } from './support.ts';

const LEVELS = ['error', 'warn', 'info', 'debug'];

describe('node logs: own level files, downloads and tails', function () {
  this.timeout(120_000);
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  let logs: string;
  before(async () => {
    node = await startOpsNode({ config: { log: { level: 'silent', files: { level: 'debug', maxBytes: 4096 } } } });
    logs = path.join(node.dataDir, 'logs');
  });
  after(() => node?.close());

  it('writes each level to its own file, each line starting with its ISO time', async () => {
    const info = (await waitFor(() => fs.existsSync(path.join(logs, 'info.log')) && fs.readFileSync(path.join(logs, 'info.log'), 'utf8'), 10_000, 'info.log')) as string;
    const first = info.split('\n')[0];
    assert.match(first, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z {10}plugin set up \{/);
    assert.ok(!info.includes('"level"'), 'the level is the file, not a field');
  });

  it('rotates a file that would pass its size bound', async () => {
    for (let i = 0; i < 40; i++) await node.host.reload(); // each reload logs a line at info
    await waitFor(() => fs.existsSync(path.join(logs, 'info.log.1')) && fs.existsSync(path.join(logs, 'info.log')), 10_000, 'info.log.1');
    assert.ok(fs.statSync(path.join(logs, 'info.log')).size <= 4096);
    assert.ok(fs.statSync(path.join(logs, 'info.log.1')).size <= 4096);
  });

  it('downloads a log file as an attachment of the same name', async () => {
    const a = await node.get('/core/infolog', asOperator());
    assert.equal(a.status, 200);
    assert.match(a.headers.get('content-disposition') ?? '', /attachment; filename="info.log"/);
    assert.match(a.headers.get('content-type') ?? '', /^text\/plain/);
    assert.ok(a.text.length > 0 && a.text.length <= fs.statSync(path.join(logs, 'info.log')).size + 4096);
  });

  it('answers the last 100 lines of a file as a success message', async () => {
    const lines = Array.from({ length: 250 }, (_, i) => `2026-01-01T00:00:00.000Z          line ${i}`);
    fs.writeFileSync(path.join(logs, 'warn.log'), lines.join('\n') + '\n');
    const data = ok(await node.get('/core/tailwarnlog', authAs(CORE_TEAM)));
    const got = data.message.trimEnd().split('\n');
    assert.equal(got.length, 100);
    assert.equal(got[0], lines[150]);
    assert.equal(got[99], lines[249]);
  });

  it('says when a log file does not exist yet (download and tail)', async () => {
    fs.rmSync(path.join(logs, 'error.log'), { force: true });
    for (const p of ['/core/errorlog', '/core/tailerrorlog']) {
      const e = err(await node.get(p, asOperator()));
      assert.deepEqual([e.code, e.name], [404, 'LogNotFound']);
    }
  });

  it('refuses every log route to anonymous callers and plain users (AdminAndCoreTeam)', async () => {
    const routes = LEVELS.flatMap((l) => [`/core/${l}log`, `/core/tail${l}log`]).concat(['/core/daemondebug', '/core/taildaemondebug', '/core/benchmarkdebug', '/core/tailbenchmarkdebug']);
    for (const p of routes) {
      assert.equal(err(await node.get(p)).code, 401, p);
      assert.equal(err(await node.get(p, authAs(MEMBER))).code, 401, p);
    }
  });

  it('refuses a query string (400) and says when no daemon debug.log is known', async () => {
    assert.equal((await node.get('/core/tailinfolog?lines=5000', asOperator())).status, 400);
    assert.equal(err(await node.get('/core/taildaemondebug', asOperator())).name, 'LogNotFound');
  });
});

describe('daemon and benchmark debug logs', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  let benchDir: string;
  before(async () => {
    ltc = await startLitecoind();
    benchDir = tmp('bench');
    fs.writeFileSync(path.join(benchDir, 'debug.log'), Array.from({ length: 150 }, (_, i) => `bench line ${i}`).join('\n') + '\n');
    node = await startOpsNode({
      withDaemon: true,
      daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password }, confFile: ltc.confFile },
      node: { benchmark: { dataDirs: [path.join(benchDir, 'missing'), benchDir] } },
    });
  });
  after(async () => {
    await node?.close();
    await ltc?.stop();
    fs.rmSync(benchDir, { recursive: true, force: true });
  });

  it("finds the daemon's debug.log from its conf and network (regtest folder) and tails it", async () => {
    const file = path.join(ltc.datadir, 'regtest', 'debug.log');
    await ltc.mine(1);
    const data = ok(await node.get('/core/taildaemondebug', authAs(CORE_TEAM)));
    const expected = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    const got = data.message.trimEnd().split('\n');
    assert.equal(got.length, Math.min(100, expected.length));
    assert.ok(expected.join('\n').includes(got.slice(0, 50).join('\n')), 'the tail is the file\'s own lines');
  });

  it("downloads the daemon's debug.log", async () => {
    const a = await node.get('/core/daemondebug', asOperator());
    assert.equal(a.status, 200);
    assert.match(a.headers.get('content-disposition') ?? '', /filename="debug.log"/);
    assert.ok(a.text.includes('Litecoin Core version'));
  });

  it("reads the benchmark daemon's debug.log from the first of its folders that has one", async () => {
    const data = ok(await node.get('/core/tailbenchmarkdebug', asOperator()));
    assert.equal(data.message, Array.from({ length: 100 }, (_, i) => `bench line ${i + 50}`).join('\n') + '\n');
    const a = await node.get('/core/benchmarkdebug', asOperator());
    assert.equal(a.text.split('\n').length, 151);
  });
});

describe('tail of a large file', function () {
  this.timeout(60_000);
  it('reads the last 100 lines of a 1 GB (sparse) file from its end', async () => {
    const dir = tmp('big');
    const file = path.join(dir, 'big.log');
    try {
      const tail = Array.from({ length: 150 }, (_, i) => `last line ${i}`).join('\n') + '\n';
      fs.writeFileSync(file, '');
      fs.truncateSync(file, 1024 ** 3 - Buffer.byteLength(tail));
      fs.appendFileSync(file, tail);
      assert.equal(fs.statSync(file).size, 1024 ** 3);
      const got = await tailLines(file, 100);
      assert.equal(got, Array.from({ length: 100 }, (_, i) => `last line ${i + 50}`).join('\n') + '\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('answers whole lines for files without a final newline, and short files whole', async () => {
    const dir = tmp('short');
    const file = path.join(dir, 'x.log');
    try {
      fs.writeFileSync(file, 'a\nb\nc');
      assert.equal(await tailLines(file, 2), 'b\nc');
      assert.equal(await tailLines(file, 100), 'a\nb\nc');
      fs.writeFileSync(file, '');
      assert.equal(await tailLines(file, 100), '');
      fs.writeFileSync(file, 'x'.repeat(300_000) + '\n');
      assert.equal((await tailLines(file, 100, 100_000)).length, 100_000, 'a huge last line is cut at the bound');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
