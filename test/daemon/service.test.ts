/**
 * The daemon service's limits against a real litecoind: the hot-read cache (TTL on the host clock, cleared
 * on a new tip, blocks by height never cached across a reorg, one daemon call for concurrent misses), and a
 * dead or hanging daemon that never blocks the node (clear errors, bounded waiting, a non-gating health check).
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { freePort } from '../support/ports.ts';
import { TestClock, type TestNode } from '../support/node.ts';
import { OPERATOR, authAs, err, ok, startDaemonNode } from './support.ts';

describe('daemon service: cache against a real litecoind', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode;
  const clock = new TestClock();
  const direct = (method: string, params: unknown[] = []) => ltc.rpc.call<any>(method, params);
  const stats = async () => ok(await node.get('/fixture/daemon/cachestats')) as { hits: number; misses: number; size: number };

  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(50);
    node = await startDaemonNode(ltc, { cache: { ttlMs: 1000, blockTtlMs: 10_000, maxEntries: 50 } }, { clock });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      await ltc?.stop();
    }
  });

  it('reuses the block count until its TTL passes on the host clock', async () => {
    const n = ok(await node.get('/daemon/getblockcount'));
    assert.equal(n, 50);
    await ltc.mine(1);
    assert.equal(ok(await node.get('/daemon/getblockcount')), 50);
    clock.advance(1001);
    assert.equal(ok(await node.get('/daemon/getblockcount')), 51);
  });

  it('keys answers by method and parameters, never by caller', async () => {
    clock.advance(1001);
    const before = await stats();
    const anon = ok(await node.get('/daemon/getbestblockhash'));
    const admin = ok(await node.get('/daemon/getbestblockhash', authAs(OPERATOR)));
    assert.equal(admin, anon);
    const after = await stats();
    assert.equal(after.misses - before.misses, 1);
    assert.equal(after.hits - before.hits, 1);
  });

  it('clears cached blocks once a new tip is seen', async () => {
    const hash = await direct('getblockhash', [10]);
    const first = ok(await node.get(`/daemon/getblock/${hash}/1`));
    await ltc.mine(1);
    assert.equal(ok(await node.get(`/daemon/getblock/${hash}/1`)).confirmations, first.confirmations);
    clock.advance(1001);
    assert.equal(ok(await node.get('/daemon/getblockcount')), await direct('getblockcount'));
    assert.equal(ok(await node.get(`/daemon/getblock/${hash}/1`)).confirmations, first.confirmations + 1);
  });

  it('never serves a block by height from before a reorg', async () => {
    const height = await direct('getblockcount');
    const old = ok(await node.get(`/daemon/getblock/${height}/1`));
    assert.equal(old.hash, await direct('getbestblockhash'));
    await direct('invalidateblock', [old.hash]);
    const [replacement] = await ltc.mine(1, await direct('getnewaddress', ['', 'bech32']));
    assert.notEqual(replacement, old.hash);
    // Same height, same clock: the node answers the new block at once.
    assert.equal(ok(await node.get(`/daemon/getblock/${height}/1`)).hash, replacement);
    assert.equal(ok(await node.get(`/daemon/getblock/${height}`)).hash, replacement);
  });

  it('makes one daemon call for concurrent misses of the same read', async () => {
    clock.advance(20_000);
    const before = await stats();
    const answers = await Promise.all(Array.from({ length: 20 }, () => node.get('/daemon/getbestblockhash')));
    const hashes = new Set(answers.map(ok));
    assert.equal(hashes.size, 1);
    const after = await stats();
    assert.equal(after.misses - before.misses, 1);
    assert.equal(after.hits - before.hits, 19);
  });

  it('reports the daemon in /core/health without gating login', async () => {
    const health = ok(await node.get('/core/health', authAs(OPERATOR)));
    const check = health.checks.find((c: any) => c.name === 'daemon');
    assert.equal(check.ok, true);
    assert.equal(check.required, false);
    assert.match(check.message, /regtest chain at height \d+/);
  });
});

describe('daemon service: a dead or hanging daemon', function () {
  this.timeout(60_000);
  let hang: net.Server;
  let hangPort: number;
  const sockets = new Set<net.Socket>();

  before(async () => {
    // Accepts connections and never answers: the slowest daemon there is.
    hang = net.createServer((s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    });
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    hangPort = (hang.address() as net.AddressInfo).port;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => hang.close(r));
  });

  it('a closed port: one clear unreachable error, health fails without making the node unhealthy', async () => {
    const node = await startDaemonNode({ url: `http://127.0.0.1:${await freePort()}/`, user: 'u', password: 'p' });
    try {
      const e = err(await node.get('/daemon/getblockcount'));
      assert.deepEqual([e.code, e.name], [503, 'DaemonUnreachable']);
      assert.match(e.message, /^The daemon is unreachable at http:\/\/127\.0\.0\.1:\d+\/ \(ECONNREFUSED\)$/);
      const health = ok(await node.get('/core/health', authAs(OPERATOR)));
      const check = health.checks.find((c: any) => c.name === 'daemon');
      assert.equal(check.ok, false);
      assert.equal(check.required, false);
      assert.match(check.message, /unreachable/);
      assert.equal(health.healthy, health.checks.filter((c: any) => c.required).every((c: any) => c.ok));
    } finally {
      await node.close();
    }
  });

  it('a hanging daemon: calls time out, the queue is bounded, other routes keep answering', async () => {
    const node = await startDaemonNode(
      { url: `http://127.0.0.1:${hangPort}/`, user: 'u', password: 'p' },
      { timeoutMs: 4000, concurrency: 1, maxQueued: 1, health: { timeoutMs: 200 } },
    );
    try {
      const calls = [node.get('/daemon/getdifficulty'), node.get('/daemon/getmempoolinfo')];
      // Wait until both are in the service (one running, one queued), then a third is refused at once.
      while (ok(await node.get('/fixture/daemon/cachestats')).inFlight < 2) await new Promise((r) => setTimeout(r, 20));
      const third = err(await node.get('/daemon/getchaintips'));
      assert.deepEqual([third.code, third.name], [503, 'DaemonBusy']);
      // The node itself is not blocked.
      assert.equal(ok(await node.get('/core/version')).length > 0, true);
      const check = ok(await node.get('/core/health', authAs(OPERATOR))).checks.find((c: any) => c.name === 'daemon');
      assert.equal(check.ok, false);
      for (const a of await Promise.all(calls)) {
        const e = err(a);
        assert.deepEqual([e.code, e.name], [504, 'DaemonTimeout']);
        assert.match(e.message, /did not answer within 4000 ms/);
      }
    } finally {
      await node.close();
    }
  });
});
