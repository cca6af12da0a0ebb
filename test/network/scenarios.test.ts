/**
 * A corenode network of real hosts (test/support/testbed): 8 node processes, each in its own network
 * namespace with its own public address, started cold with the node list as their only knowledge (no
 * seeds). Two sit behind one NAT router and keep their API ports mapped through its miniupnpd; three share
 * one public IP behind another router (API ports 16127, 16137, 16147, forwarded); three serve HTTPS (one on
 * its API port only, one beside HTTP on the next port, one IPv6-only). Then: a broadcast from any node
 * reaches all; a node cut off catches up after the heal; a node killed with -9 is back in the mesh; with 2 %
 * of packets lost on every host, a cold start and broadcasts still hold; an unlisted key and a key listed at
 * another IP are refused by every node and not retried in a loop; a node 10 minutes ahead sees it in
 * `/core/clockdrift` and `/core/health`.
 */
import assert from 'node:assert/strict';
import { Testbed, QUICK_PEERS, leftovers, type TestbedNode } from '../support/testbed/index.ts';
import { MESH, meshNetwork } from '../support/testbed/networks.ts';
import { listEntry } from '../support/testbed/chain.ts';
import { login } from '../support/wallets.ts';
import { eventually } from '../support/wait.ts';

const data = (a: { json?: any; status: number; text: string }) => {
  if (a.json?.status !== 'success') throw new Error(`not a success: ${a.status} ${a.text.slice(0, 300)}`);
  return a.json.data;
};


describe('a network of real hosts: 8 nodes find each other from the node list', function () {
  this.timeout(600_000);
  let tb: Testbed;
  const admin = new Map<string, Record<string, string>>();
  const auth = async (n: TestbedNode) => {
    if (!admin.has(n.name)) admin.set(n.name, { legacyidauth: (await login(n, n.operator)).header });
    return admin.get(n.name)!;
  };
  const mesh = () => MESH.map((m) => tb.node(m));
  const communicating = async (n: TestbedNode) => (await n.get('/core/checkcommunication').catch(() => null))?.json?.status === 'success';
  const allCommunicating = async (nodes = mesh()) => (await Promise.all(nodes.map(communicating))).every(Boolean);
  const recent = async (n: TestbedNode) => data(await n.get('/core/networkhealth')).messages.recent as { data?: unknown; hops: number }[];
  const broadcastReachesAll = async (from: TestbedNode, tag: string) => {
    data(await from.post('/core/broadcastmessage', { tag }, await auth(from)));
    const others = mesh().filter((n) => n !== from);
    await eventually(async () => (await Promise.all(others.map(recent))).every((r) => r.some((m) => (m.data as any)?.tag === tag)), {
      what: `${tag} from ${from.name} on all 7 others`,
      everyMs: 300,
      timeoutMs: 30_000,
    });
  };

  before(async () => {
    tb = await Testbed.start(
      meshNetwork([
        // Started by the tests that need them.
        { name: 'unlisted', node: { listed: false } },
        { name: 'elsewhere', node: { listed: false } },
        { name: 'skewed', node: { clockOffsetSeconds: 600 } },
      ]),
    );
    // Listed: the mesh and the skewed node; `elsewhere`'s key is listed at an address that is not its own.
    tb.listNodes((n) => n.listed);
    tb.chain.nodeList.push(listEntry({ pubkey: tb.node('elsewhere').nodeKey.pubKey, ip: '11.99.0.2:16127', rank: 99 }));
  });

  after(async () => {
    const prefix = tb?.net.prefix;
    await tb?.stop();
    if (prefix) assert.deepEqual(leftovers(prefix), []);
  });

  it('cold start, no seeds: within 60 s every node has the links /core/checkcommunication requires', async () => {
    const started = Date.now();
    await Promise.all(mesh().map((n) => n.start()));
    await eventually(() => allCommunicating(), { what: 'all 8 communicating', everyMs: 500, timeoutMs: 60_000 });
    const seconds = (Date.now() - started) / 1000;
    // Three nodes share one public IP: each is dialled at its own port, and each reaches its minimums.
    const sharedIp = tb.node('sh1').listedAddress.split(':')[0];
    const dialled = async () => (data(await tb.node('pub1').get('/core/connectedpeersinfo')) as { ip: string; port: number }[]).filter((p) => p.ip === sharedIp).map((p) => p.port).sort();
    await eventually(async () => (await dialled()).length === 3, { what: 'pub1 linked to the three nodes of one IP', everyMs: 300, timeoutMs: 30_000 });
    assert.deepEqual(await dialled(), [16127, 16137, 16147]);
    // The HTTPS nodes are linked over TLS; the IPv6-only one over IPv6.
    const onPub1 = data(await tb.node('pub2').get('/core/peers')) as { ip: string; tls?: boolean }[];
    assert.ok(onPub1.some((p) => p.ip === tb.node('pub1').listedAddress.split(':')[0] && p.tls), JSON.stringify(onPub1.map((p) => [p.ip, p.tls])));
    const v6peers = data(await tb.node('v6only').get('/core/peers')) as { ip: string }[];
    assert.ok(v6peers.length >= 2 && v6peers.every((p) => p.ip.includes(':')), JSON.stringify(v6peers.map((p) => p.ip)));
    console.log(`      (all 8 met their minimums ${seconds.toFixed(1)} s after the start)`);
  });

  it('a broadcast from any node reaches all 8', async () => {
    for (const from of MESH) await broadcastReachesAll(tb.node(from), `from-${from}`);
  });

  it('a node cut off catches up on what it missed after the heal', async () => {
    const cut = tb.node('home1');
    tb.cut('home1');
    // Cut until its peers have dropped it (missed pongs).
    const addr = (p: { ip: string; port: number }) => (p.ip.includes(':') ? `[${p.ip}]:${p.port}` : `${p.ip}:${p.port}`);
    await eventually(
      async () => (await Promise.all(mesh().filter((n) => n !== cut).map(async (n) => data(await n.get('/core/peers')) as { ip: string; port: number }[]))).every((l) => !l.some((p) => addr(p) === cut.listedAddress)),
      { what: 'home1 dropped by its peers', everyMs: 500, timeoutMs: 60_000 },
    );
    try {
      const tag = `while-home1-was-cut-${Date.now()}`;
      const from = tb.node('sh2');
      data(await from.post('/core/broadcastmessage', { tag }, await auth(from)));
      const others = mesh().filter((n) => n !== cut && n !== from);
      await eventually(async () => (await Promise.all(others.map(recent))).every((r) => r.some((m) => (m.data as any)?.tag === tag)), { what: 'the message on the 6 others', everyMs: 300, timeoutMs: 30_000 });
      assert.ok(!(await recent(cut)).some((m) => (m.data as any)?.tag === tag), 'home1 got it while cut');
      tb.heal('home1');
      await eventually(async () => (await recent(cut)).some((m) => (m.data as any)?.tag === tag), { what: 'home1 caught up', everyMs: 500, timeoutMs: 60_000 });
      await eventually(() => communicating(cut), { what: 'home1 back at its minimums', everyMs: 500, timeoutMs: 60_000 });
    } finally {
      tb.heal('home1');
    }
  });

  it('a node killed with -9 and started again is back in the mesh within 30 s', async () => {
    const n = tb.node('sh2');
    await n.kill();
    await n.start();
    await eventually(() => communicating(n), { what: 'sh2 back at its minimums', everyMs: 300, timeoutMs: 30_000 });
    await broadcastReachesAll(n, 'from-sh2-after-kill');
  });

  it('an unlisted key, and a key listed at another IP, are refused by every node they reach and not retried in a loop', async () => {
    const rogues = [tb.node('unlisted'), tb.node('elsewhere')];
    // They know the network from the node list they read like any node.
    await Promise.all(rogues.map((r) => r.start()));
    const refusedBy = async (n: TestbedNode, r: TestbedNode) => {
      const ip = r.host.publicV4!;
      return (data(await n.get(`/core/peerhistory?event=refused&ip=${ip}`, await auth(n))) as unknown[]).length;
    };
    // Both rogues have IPv4 only: every node but the IPv6-only one is theirs to try. (A dual-stack rogue could
    // reach the IPv6-only node from its IPv6, where a key listed at an IPv4 is taken on its proof alone:
    // plugins/peers/README.md, Links across address families.)
    const reachable = mesh().filter((n) => n.name !== 'v6only');
    for (const r of rogues)
      await eventually(async () => (await Promise.all(reachable.map((n) => refusedBy(n, r)))).every((c) => c >= 1), { what: `${r.name} refused by all 7 it can reach`, everyMs: 500, timeoutMs: 60_000 });
    const counts = async () => Promise.all(rogues.flatMap((r) => reachable.map((n) => refusedBy(n, r))));
    const before = await counts();
    // Let each rogue run 20 more of its maintenance rounds (QUICK_PEERS: one every 500 ms).
    const samples = async (r: TestbedNode) => (data(await r.get('/core/networkhealth')).history as { time: number }[]).at(-1)!.time;
    const since = await Promise.all(rogues.map(samples));
    await eventually(async () => (await Promise.all(rogues.map(samples))).every((t, i) => t - since[i] >= 20 * QUICK_PEERS.maintainMs), { what: '20 rounds', everyMs: 500, timeoutMs: 60_000 });
    const after = await counts();
    // A refused node waits peers.refusedRetryMs (5 min) before it dials a node that refused it again.
    assert.deepEqual(after, before);
    for (const r of rogues) {
      assert.equal(data(await r.get('/core/connectedpeers')).length, 0);
      assert.equal(data(await r.get('/core/incomingconnections')).length, 0);
    }
    await Promise.all(rogues.map((r) => r.stop()));
  });

  it('a node whose clock is 10 minutes ahead is reported by /core/clockdrift and /core/health', async () => {
    const n = tb.node('skewed');
    await n.start();
    await eventually(async () => data(await n.get('/core/clockdrift', await auth(n))).peers >= 2, { what: 'the skewed node linked', everyMs: 500, timeoutMs: 60_000 });
    const drift = data(await n.get('/core/clockdrift', await auth(n)));
    assert.equal(drift.source, 'peers');
    assert.ok(Math.abs(drift.offset - 600) < 30, `offset ${drift.offset} s`);
    assert.equal(drift.over, true);
    const health = await n.get('/core/health');
    assert.ok(/clockdrift/i.test(health.text) && /600|ahead|drift/i.test(health.text), health.text.slice(0, 400));
    // The route is the operator's.
    assert.equal((await n.get('/core/clockdrift')).json.data.code, 401);
    await n.stop();
  });

  it('with 2 % of packets lost on every host, a cold start and broadcasts still hold', async () => {
    await Promise.all(mesh().map((n) => n.stop()));
    tb.loss(0.02);
    try {
      await Promise.all(mesh().map((n) => n.start()));
      await eventually(() => allCommunicating(), { what: 'all 8 communicating under loss', everyMs: 500, timeoutMs: 60_000 });
      for (const from of ['pub2', 'home1', 'v6only']) await broadcastReachesAll(tb.node(from), `lossy-from-${from}`);
    } finally {
      tb.noLoss();
    }
  });
});
