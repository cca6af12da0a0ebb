/**
 * Control of the daemons through /core, on real litecoinds: the daemon's start, restart and reindex (the
 * daemon plugin's service), its update (a configured argument vector, then a restart), and the benchmark
 * daemon's start, restart and update (a second litecoind stands in for it: same RPC family). One control
 * action at a time; each answers once the daemon answers again.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { CORE_TEAM, MEMBER, asOperator, authAs, err, ok, startOpsNode, tmp, waitFor } from './support.ts';

const startArgv = (l: Regtest) => ['litecoind', `-datadir=${l.datadir}`, `-conf=${l.confFile}`, '-printtoconsole=0', '-daemon'];
const pidOf = (l: Regtest) => {
  const f = path.join(l.datadir, 'regtest', 'bitcoind.pid');
  return fs.existsSync(f) ? fs.readFileSync(f, 'utf8').trim() : null;
};
/**
 * A call on a fresh connection, closed after: a daemon told to stop waits for every kept-alive connection
 * to go, so the test holds none between calls.
 */
async function direct<T = unknown>(l: Regtest, method: string, params: unknown[] = []): Promise<T> {
  const c = createRpcClient({ url: l.url, user: l.user, password: l.password, timeoutMs: 30_000, concurrency: 1 });
  try {
    return await c.call<T>(method, params);
  } finally {
    c.close();
  }
}

/** Stop whatever instance runs now (the node may have started it) and wait until it lets go of its folder. */
async function stopAll(l: Regtest | undefined) {
  if (!l) return;
  await direct(l, 'stop').catch(() => undefined);
  await waitFor(() => pidOf(l) === null, 60_000, 'litecoind to exit').catch(() => undefined);
  await l.stop();
}

describe('daemon and benchmark control through /core (real litecoind)', function () {
  this.timeout(300_000);
  let ltc: Regtest;
  let bench: Regtest;
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  let marks: string;

  before(async () => {
    [ltc, bench] = await Promise.all([startLitecoind(), startLitecoind()]);
    await ltc.mine(12);
    for (const l of [ltc, bench]) (l.rpc as ReturnType<typeof createRpcClient>).close();
    marks = tmp('marks');
    node = await startOpsNode({
      withDaemon: true,
      daemon: {
        rpc: { url: ltc.url, user: ltc.user, password: ltc.password },
        confFile: ltc.confFile,
        cache: { ttlMs: 0, blockTtlMs: 0 },
        startCommand: startArgv(ltc),
        stopWaitMs: 60_000,
        startWaitMs: 60_000,
      },
      node: {
        daemon: { updateCommand: ['touch', path.join(marks, 'daemon-updated')] },
        benchmark: {
          confFile: bench.confFile,
          startCommand: startArgv(bench),
          updateCommand: ['touch', path.join(marks, 'benchmark-updated')],
          startWaitMs: 60_000,
          stopWaitMs: 60_000,
        },
      },
    });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      await Promise.all([stopAll(ltc), stopAll(bench)]);
      if (marks) fs.rmSync(marks, { recursive: true, force: true });
    }
  });

  it('refuses to start a daemon that runs, and keeps start/restart/reindex to the operator (Admin)', async () => {
    const e = err(await node.get('/core/startdaemon', asOperator()));
    assert.deepEqual([e.code, e.name], [409, 'DaemonRunning']);
    for (const p of ['/core/startdaemon', '/core/restartdaemon', '/core/reindexdaemon'])
      for (const who of [undefined, authAs(MEMBER), authAs(CORE_TEAM)]) assert.equal(err(await node.get(p, who)).code, 401, p);
  });

  it('restarts the daemon: a new process, answered once it answers; a second action meanwhile is refused', async () => {
    const before = pidOf(ltc);
    const [a, b] = await Promise.all([node.get('/core/restartdaemon', asOperator()), node.get('/core/restartbenchmark', authAs(CORE_TEAM))]);
    const answers = [a.json, b.json];
    assert.deepEqual(a.json, { status: 'success', data: { message: 'Daemon successfully restarted' } }, JSON.stringify(answers));
    assert.deepEqual([b.json.data.code, b.json.data.name], [409, 'ControlBusy'], JSON.stringify(answers));
    assert.notEqual(pidOf(ltc), before);
    assert.equal(await direct(ltc, 'getblockcount'), 12);
  });

  it('reindexes the daemon', async () => {
    assert.deepEqual(ok(await node.get('/core/reindexdaemon', asOperator())), { message: 'Daemon successfully reindexing' });
    await waitFor(async () => (await direct<number>(ltc, 'getblockcount').catch(() => -1)) === 12, 60_000, 'reindex');
  });

  it('starts a stopped daemon', async () => {
    await direct(ltc, 'stop');
    await waitFor(() => pidOf(ltc) === null, 60_000, 'daemon stop');
    assert.deepEqual(ok(await node.get('/core/startdaemon', asOperator())), { message: 'Daemon successfully started' });
    assert.equal(await direct(ltc, 'getblockcount'), 12);
  });

  it('updates the daemon with the configured command, then restarts it (AdminAndCoreTeam)', async () => {
    const before = pidOf(ltc);
    assert.equal(err(await node.get('/core/updatedaemon', authAs(MEMBER))).code, 401);
    assert.deepEqual(ok(await node.get('/core/updatedaemon', authAs(CORE_TEAM))), { message: 'Daemon successfully updated' });
    assert.ok(fs.existsSync(path.join(marks, 'daemon-updated')));
    assert.notEqual(pidOf(ltc), before);
  });

  it('restarts, starts and updates the benchmark daemon', async () => {
    let before = pidOf(bench);
    assert.deepEqual(ok(await node.get('/core/restartbenchmark', asOperator())), { message: 'Benchmark successfully restarted' });
    assert.notEqual(pidOf(bench), before);
    assert.equal(err(await node.get('/core/startbenchmark', asOperator())).name, 'BenchmarkRunning');
    await direct(bench, 'stop');
    await waitFor(() => pidOf(bench) === null, 60_000, 'benchmark stop');
    assert.deepEqual(ok(await node.get('/core/startbenchmark', authAs(CORE_TEAM))), { message: 'Benchmark successfully started' });
    before = pidOf(bench);
    assert.deepEqual(ok(await node.get('/core/updatebenchmark', asOperator())), { message: 'Benchmark successfully updated' });
    assert.ok(fs.existsSync(path.join(marks, 'benchmark-updated')));
    assert.notEqual(pidOf(bench), before);
    for (const p of ['/core/startbenchmark', '/core/restartbenchmark', '/core/updatebenchmark']) assert.equal(err(await node.get(p, authAs(MEMBER))).code, 401, p);
  });
});

describe('control failures say why', function () {
  this.timeout(60_000);
  it('a failing update command, a missing binary, and no daemon plugin are clear errors', async () => {
    const node = await startOpsNode({
      node: {
        daemon: { updateCommand: ['sh', '-c', 'echo no repository >&2; exit 3'] },
        benchmark: { rpc: { url: 'http://127.0.0.1:1/' }, startCommand: ['/nonexistent/corebenchd'], startWaitMs: 500 },
      },
    });
    try {
      let e = err(await node.get('/core/updatedaemon', asOperator()));
      assert.deepEqual([e.code, e.name], [500, 'CommandFailed']);
      assert.match(e.message, /exited with code 3: no repository/);
      e = err(await node.get('/core/startbenchmark', asOperator()));
      assert.deepEqual([e.name, e.message], ['CommandFailed', 'Cannot run /nonexistent/corebenchd: ENOENT']);
      e = err(await node.get('/core/restartdaemon', asOperator()));
      assert.deepEqual([e.code, e.name], [503, 'DaemonPluginDisabled']);
      assert.equal((await node.get('/core/startdaemon?now=1', asOperator())).status, 400);
    } finally {
      await node.close();
    }
  });
});
