/**
 * Issue 11, "daemon queue starvation": 510 concurrent anonymous gettxoutsetinfo used to fill the daemon
 * client's slots and queue, and the operator's routes and the explorer got DaemonBusy at once. Public
 * callers now have their own bounded lane; the operator, the core team and the node's own callers (the
 * explorer) another. The flood runs against a real litecoind, with a small public lane so that it surely
 * overflows on any machine.
 */
import assert from 'node:assert/strict';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { startNode, type Answer, type TestNode } from '../support/node.ts';
import { MEMBER, OPERATOR, authAs, isolatedPlugins, ok } from './support.ts';
import { Lane } from '../../lib/daemon-rpc/lanes.ts';
import type { RpcError } from '../../lib/daemon-rpc/rpc.ts';

describe('daemon lanes: a public flood does not starve the operator or the explorer (real litecoind)', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode;
  let dirs: ReturnType<typeof isolatedPlugins>;

  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(101);
    dirs = isolatedPlugins('daemon', 'explorer');
    node = await startNode({
      manifestsDir: dirs.manifestsDir,
      config: {
        pluginsDir: dirs.pluginsDir,
        initial: { legacyid: OPERATOR },
        // One public call at a time and 200 waiting: the 510 below overflow it, and the queued ones keep
        // it full while the operator's and the explorer's calls are made.
        daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password }, concurrency: 1, maxQueued: 200, cache: { ttlMs: 0, blockTtlMs: 0 } },
        explorer: { pollIntervalMs: 100, retryIntervalMs: 100 },
      },
    });
  });
  after(async () => {
    await node?.close();
    dirs?.cleanup();
    await ltc?.stop();
  });

  it('510 concurrent anonymous gettxoutsetinfo: some are refused as busy, the operator and the explorer still get through', async () => {
    // Counted in the order answers arrive (one thread), not by clock: no two answers tie.
    let publicServed = 0;
    let overflowed!: () => void;
    const full = new Promise<void>((r) => (overflowed = r));
    const flood = Array.from({ length: 510 }, () =>
      node.get('/daemon/gettxoutsetinfo').then((a) => {
        if (a.json?.status === 'success') publicServed++;
        if (a.json?.data?.name === 'DaemonBusy') overflowed();
        return a;
      }),
    );
    // The privileged calls go out once the public lane is seen full (a first DaemonBusy), so they meet a
    // queue of public calls still to serve: sent with the flood, a loaded machine accepted them only after
    // it had drained (325 of 325 served first, at load 7).
    await full;
    const stamp = (p: Promise<Answer>) => p.then((a) => ({ a, servedBefore: publicServed }));
    const privileged = [
      stamp(node.get('/daemon/getaddednodeinfo', authAs(OPERATOR))), // an operator (admin) route
      stamp(node.get('/daemon/getblockcount', authAs(OPERATOR))), // the operator on a public route
      stamp(node.get(`/explorer/balance?address=${ltc.miner}`)), // the explorer asks the daemon itself
      stamp(node.get('/explorer/issynced', authAs(MEMBER))),
    ];
    const answers = await Promise.all(privileged);
    const floodAnswers = await Promise.all(flood);

    const names = floodAnswers.map((a) => (a.json?.status === 'success' ? 'success' : a.json?.data?.name));
    const busy = names.filter((n) => n === 'DaemonBusy').length;
    const served = names.filter((n) => n === 'success').length;
    assert.ok(busy > 0, `the flood should overflow the public lane: ${JSON.stringify(names.slice(0, 5))}`);
    assert.ok(served > 0 && served + busy === 510, `every flood call is served or refused as busy: ${served} served, ${busy} busy`);

    const [addednodes, count, balance, synced] = answers.map(({ a }) => ok(a));
    assert.deepEqual(addednodes, []);
    assert.equal(count, 101);
    assert.ok(Number.isInteger(balance));
    assert.equal(typeof synced.synced, 'boolean');
    // They were answered while the public lane still had queued calls to serve, not after the flood drained.
    for (const { servedBefore } of answers) assert.ok(servedBefore < served, `a privileged call waited for the public flood to drain (${servedBefore} of ${served} served before it)`);
  });
});

describe('a lane (lib/daemon-rpc/lanes.ts)', () => {
  /** A call that runs until released. */
  function held() {
    let release!: () => void;
    const done = new Promise<void>((r) => (release = r));
    return { fn: () => done.then(() => 'ok'), release };
  }

  it('runs `concurrency` calls, queues `maxQueued`, refuses the rest at once, hands slots on in order', async () => {
    const lane = new Lane('public', { concurrency: 1, maxQueued: 1 }, 'daemon');
    const signal = new AbortController().signal;
    const a = held();
    const b = held();
    const pa = lane.run(a.fn, signal);
    const pb = lane.run(b.fn, signal);
    assert.equal(lane.inFlight, 2);
    await assert.rejects(lane.run(async () => 'x', signal), (e: RpcError) => e.code === 'EBUSY' && /daemon is busy: 2 calls/.test(e.message));
    a.release();
    assert.equal(await pa, 'ok');
    b.release();
    assert.equal(await pb, 'ok');
    assert.equal(lane.inFlight, 0);
  });

  it('a waiting call leaves the line when its signal aborts, and the line moves on', async () => {
    const lane = new Lane('priority', { concurrency: 1, maxQueued: 5 }, 'daemon');
    const a = held();
    const pa = lane.run(a.fn, new AbortController().signal);
    const ac = new AbortController();
    const waiting = lane.run(async () => 'never', ac.signal);
    ac.abort(new Error('caller went away'));
    await assert.rejects(waiting, /caller went away/);
    assert.equal(lane.inFlight, 1);
    a.release();
    await pa;
    assert.equal(await lane.run(async () => 'next', new AbortController().signal), 'next');
  });
});
