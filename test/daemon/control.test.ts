/**
 * Operator controls that run the daemon binary, on a dedicated real litecoind: stop (RPC), start, restart and
 * reindex (the configured argument vector, no shell), one at a time; failures to start are clear errors.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_CORE_TEAM } from '../../core/config.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { freePort } from '../support/ports.ts';
import { RpcError, type RpcConnection } from '../../lib/daemon-rpc/rpc.ts';
import type { TestNode } from '../support/node.ts';
import { OPERATOR, authAs, err, ok, startDaemonNode } from './support.ts';

const CORE_TEAM = DEFAULT_CORE_TEAM[0];

describe('daemon start, stop, restart and reindex (dedicated real litecoind)', function () {
  this.timeout(180_000);
  let ltc: Regtest;
  let node: TestNode;
  let pidFile: string;
  const pid = () => (fs.existsSync(pidFile) ? fs.readFileSync(pidFile, 'utf8').trim() : null);
  /** A call straight to litecoind; its kept-alive socket is closed after, or a stopping daemon waits 30 s for it. */
  async function direct(method: string, params: unknown[] = []): Promise<any> {
    try {
      return await ltc.rpc.call<any>(method, params);
    } finally {
      (ltc.rpc as RpcConnection).closeIdle();
    }
  }
  /** After a (re)start the daemon answers "-28 loading block index" for a while: wait that out, within a bound. */
  async function warm(method = 'getblockcount'): Promise<any> {
    const end = Date.now() + 120_000;
    for (;;) {
      try {
        return await direct(method);
      } catch (e) {
        if (!(e instanceof RpcError && e.code === -28) || Date.now() > end) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
  async function gone() {
    for (let i = 0; pid() !== null && i < 600; i++) await new Promise((r) => setTimeout(r, 100));
  }

  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(30);
    (ltc.rpc as RpcConnection).closeIdle(); // see direct()
    pidFile = path.join(ltc.datadir, 'regtest', 'bitcoind.pid');
    node = await startDaemonNode(ltc, {
      cache: { ttlMs: 0, blockTtlMs: 0 },
      startCommand: ['litecoind', `-datadir=${ltc.datadir}`, `-conf=${ltc.confFile}`, '-printtoconsole=0', '-daemon'],
      stopWaitMs: 60_000,
      startWaitMs: 60_000,
    });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      // Whatever instance runs now may have been started by the node: stop it, wait until it lets go of its folder.
      await direct('stop').catch(() => undefined);
      if (pidFile) await gone();
      await ltc?.stop();
    }
  });

  it('refuses to start a daemon that is already running', async () => {
    const e = err(await node.get('/daemon/start', authAs(OPERATOR)));
    assert.deepEqual([e.code, e.name], [409, 'DaemonRunning']);
  });

  it('stops the daemon over RPC, then starts it with the configured command', async () => {
    assert.match(ok(await node.get('/daemon/stop', authAs(OPERATOR))), /stopping/);
    await gone();
    assert.equal(err(await node.get('/daemon/getblockcount')).name, 'DaemonUnreachable');
    assert.deepEqual(ok(await node.get('/daemon/start', authAs(CORE_TEAM))), { message: 'Daemon successfully started' });
    assert.equal(await warm(), 30);
    assert.equal(ok(await node.get('/daemon/getblockcount')), 30);
  });

  it('restarts the daemon (a new process), one control action at a time', async () => {
    const before = pid();
    const [a, b] = await Promise.all([node.get('/daemon/restart', authAs(OPERATOR)), node.get('/daemon/restart', authAs(CORE_TEAM))]);
    const answers = [a.json, b.json];
    assert.equal(answers.filter((x) => x.status === 'success' && x.data.message === 'Daemon successfully restarted').length, 1, JSON.stringify(answers));
    assert.equal(answers.filter((x) => x.status === 'error' && x.data.name === 'DaemonControlBusy' && x.data.code === 409).length, 1, JSON.stringify(answers));
    assert.notEqual(pid(), before);
    assert.equal(await warm(), 30);
  });

  it('reindexes: stops the daemon and starts it with the reindex arguments', async () => {
    assert.deepEqual(ok(await node.get('/daemon/reindex', authAs(OPERATOR))), { message: 'Daemon successfully reindexing' });
    // Warm-up (-28) first, then the reindex itself walks the blocks again: wait for both, within a bound.
    const end = Date.now() + 120_000;
    while ((await warm()) !== 30) {
      assert.ok(Date.now() < end, 'the reindexed daemon did not reach height 30 within 120 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(ok(await node.get('/daemon/getblockcount')), 30);
  });
});

describe('daemon start failures', function () {
  this.timeout(60_000);

  it('names a command that cannot run, and one that exits with an error', async () => {
    const dead = { url: `http://127.0.0.1:${await freePort()}/`, user: 'u', password: 'p' };
    let node: TestNode = await startDaemonNode(dead, { startCommand: ['/nonexistent/cored', '-daemon'], startWaitMs: 500 });
    try {
      const e = err(await node.get('/daemon/start', authAs(OPERATOR)));
      assert.deepEqual([e.code, e.name, e.message], [500, 'DaemonStartFailed', 'Cannot run /nonexistent/cored: ENOENT']);
    } finally {
      await node.close();
    }
    node = await startDaemonNode(dead, { startCommand: ['false'], startWaitMs: 500 });
    try {
      const e = err(await node.get('/daemon/start', authAs(OPERATOR)));
      assert.deepEqual([e.code, e.name], [500, 'DaemonStartFailed']);
      assert.match(e.message, /^false exited with code 1/);
    } finally {
      await node.close();
    }
    node = await startDaemonNode(dead, { startCommand: ['true'], startWaitMs: 300 });
    try {
      const e = err(await node.get('/daemon/start', authAs(OPERATOR)));
      assert.deepEqual([e.code, e.name], [504, 'DaemonTimeout']);
      assert.match(e.message, /did not answer within 300 ms/);
    } finally {
      await node.close();
    }
  });
});
