/**
 * `/core/clockdrift` and the `clockdrift` health check. First the measure (plugins/peers/clockdrift.ts) on
 * links given by the test: the median over peers, half the round trip taken off, no peers, one warning when
 * the offset goes over the limit and one info line when it comes back. Then three node processes
 * (membership open) on 127.0.0.2-4, the third with its clock 10 minutes ahead (libfaketime, as the testbed
 * skews a node): its own report shows the others about -600 s and fails its check; the others name it in
 * theirs; the route is admin only; the warning is logged once.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ClockDrift, driftCheck, median, type LinkClock } from '../../plugins/peers/clockdrift.ts';
import { LIBFAKETIME, skewEnv } from '../support/faketime.ts';
import { eventually } from '../support/wait.ts';
import { bitcoinWallet, login } from '../support/wallets.ts';
import { Cluster, data, type ClusterNode } from './cluster.ts';

const PORT = 30150;

function logger() {
  const lines: { level: string; msg: string }[] = [];
  return { lines, warn: (_o: object, msg: string) => void lines.push({ level: 'warn', msg }), info: (_o: object, msg: string) => void lines.push({ level: 'info', msg }) };
}

const link = (ip: string, remoteClockOffsetMs: number, latency = -1): LinkClock => ({ ip, port: 16127, direction: 'outbound', nodeKey: `key-${ip}`, remoteClockOffsetMs, latency });

describe('clock drift against the peers', function () {
  this.timeout(180_000);

  describe('the measure', () => {
    it('no peers: source none, offset null, not over', () => {
      const r = new ClockDrift(30_000, () => 1_700_000_000_500, logger()).measure([]);
      assert.deepEqual(r, { source: 'none', offset: null, time: 1_700_000_000, peers: 0, offsets: [], limit: 30, over: false });
      assert.equal(driftCheck(r).ok, true);
    });

    it('each peer: its clock less this node’s, half the round trip taken off; the node: minus the median', () => {
      // A frame stamped by a peer 600 s behind arrives 600 s + 40 ms (transit) "late" on this clock.
      const r = new ClockDrift(30_000, Date.now, logger()).measure([link('10.0.0.1', 600_040, 80), link('10.0.0.2', 600_000), link('10.0.0.3', -5)]);
      assert.deepEqual(r.offsets.map((o) => o.offset), [-600, -600, 0.005]);
      assert.deepEqual([r.source, r.offset, r.peers, r.over], ['peers', 600, 3, true]);
    });

    it('a peer linked both ways is one peer (its links averaged)', () => {
      const r = new ClockDrift(30_000, Date.now, logger()).measure([link('10.0.0.1', 1000), { ...link('10.0.0.1', 3000), direction: 'inbound' }, link('10.0.0.2', 0)]);
      assert.deepEqual(r.offsets.map((o) => [o.ip, o.links, o.offset]), [['10.0.0.1', 2, -2], ['10.0.0.2', 1, 0]]);
      assert.equal(r.peers, 2);
    });

    it('of an even count, the middle value nearer zero: one peer of two with a wrong clock does not make this node wrong', () => {
      assert.equal(median([0.01, 600]), 0.01);
      assert.equal(median([-600, -0.2]), -0.2);
      assert.equal(median([3, 1, 2]), 2);
      const r = new ClockDrift(30_000, Date.now, logger()).measure([link('10.0.0.1', 0), link('10.0.0.2', -600_000)]);
      assert.deepEqual([r.offset, r.over], [0, false]);
      assert.match(driftCheck(r).message, /^clock within 30 s of its peers .*; peers off by more than 30 s: 10\.0\.0\.2:16127 \(\+600 s\)$/);
    });

    it('logs one warning when the offset goes over the limit and one info line when it is back, not one per measure', () => {
      const log = logger();
      const d = new ClockDrift(30_000, Date.now, log);
      for (let i = 0; i < 3; i++) d.measure([link('10.0.0.1', 5)]);
      for (let i = 0; i < 5; i++) d.measure([link('10.0.0.1', -45_000)]);
      d.measure([]);
      for (let i = 0; i < 3; i++) d.measure([link('10.0.0.1', 100)]);
      assert.deepEqual(log.lines, [
        { level: 'warn', msg: "peers: this node's clock is 45 s behind its peers' (median), over the 30 s limit" },
        { level: 'info', msg: "peers: this node's clock is back within 30 s of its peers'" },
      ]);
    });
  });

  describe('three node processes, the third 10 minutes ahead', () => {
    const operator = bitcoinWallet();
    const user = bitcoinWallet();
    const coreTeam = bitcoinWallet();
    let c: Cluster;
    let n: ClusterNode[];
    const admin: Record<number, Record<string, string>> = {};
    const drift = async (node: ClusterNode) => data(await node.get('/core/clockdrift', admin[node.i]));
    const healthCheck = async (node: ClusterNode) => (data(await node.get('/core/health', admin[node.i])).checks as any[]).find((x) => x.name === 'clockdrift');
    const links = async (node: ClusterNode) => (data(await node.get('/core/peers')) as unknown[]).length;
    const warnings = (node: ClusterNode) => {
      const file = path.join(node.dataDir, 'logs', 'warn.log');
      return fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.includes("this node's clock is")) : [];
    };

    before(async function () {
      if (!fs.existsSync(LIBFAKETIME)) return this.skip();
      c = new Cluster({
        n: 3,
        port: PORT,
        plugins: ['identity', 'peers'],
        operator: operator.legacyid,
        coreTeam: [coreTeam.legacyid],
        peers: { membership: 'open' },
        // What `faketime -f +600s node …` sets, on the node process itself: the faketime command runs the
        // node as its child, and killed it leaves the node running and its shared memory behind (tried).
        env: (i): Record<string, string> => (i === 2 ? skewEnv(600) : {}),
      });
      n = c.nodes;
      await c.startAll();
      for (const node of n) admin[node.i] = { legacyidauth: (await login(node.client, operator)).header };
      await eventually(async () => (await Promise.all(n.map(links))).every((l) => l === 4), { what: 'each node linked to both others both ways', everyMs: 300 });
    });
    after(async () => {
      await c?.stop();
    });

    it('the skewed node reports the others about -600 s, itself about +600 s over the limit, and fails its health check', async () => {
      const r = await drift(n[2]);
      assert.equal(r.source, 'peers');
      assert.ok(Math.abs(r.offset - 600) < 5, `offset ${r.offset}`);
      assert.ok(r.offsets.every((o: any) => Math.abs(o.offset + 600) < 5), JSON.stringify(r.offsets));
      assert.deepEqual([r.peers, r.limit, r.over], [2, 30, true]);
      assert.ok(Math.abs(r.time - (Math.floor(Date.now() / 1000) + 600)) < 5, 'time is the node’s own clock, unix seconds');
      const check = await healthCheck(n[2]);
      assert.deepEqual([check.ok, check.required], [false, false]);
      assert.match(check.message, /^clock (599|600)(\.\d+)? s ahead of its peers \(median of 2\), over the 30 s limit/);
      // Not required: the skewed node still hands out login phrases.
      assert.equal((await n[2].get('/id/loginphrase')).json.status, 'success');
    });

    it('the others report it about +600 s, their own clocks within the limit, and name it in their health check', async () => {
      for (const node of [n[0], n[1]]) {
        const r = await drift(node);
        const skewed = r.offsets.find((o: any) => o.ip === n[2].ip);
        assert.ok(Math.abs(skewed.offset - 600) < 5, JSON.stringify(r.offsets));
        assert.ok(Math.abs(r.offset) < 5 && !r.over, JSON.stringify(r));
        const check = await healthCheck(node);
        assert.equal(check.ok, true);
        assert.match(check.message, new RegExp(`peers off by more than 30 s: ${n[2].ip.replaceAll('.', '\\.')}:${PORT} \\(\\+(599|600)(\\.\\d+)? s\\)`));
      }
      // The public view of /core/health names the check and its verdict only.
      const pub = (data(await n[2].get('/core/health')).checks as any[]).find((x) => x.name === 'clockdrift');
      assert.deepEqual(pub, { name: 'clockdrift', ok: false, required: false });
    });

    it('is admin only: anonymous callers, users and the core team get the envelope with 401; a query string 400', async () => {
      const member = { legacyidauth: (await login(n[0].client, user)).header };
      const team = { legacyidauth: (await login(n[0].client, coreTeam)).header };
      for (const headers of [undefined, member, team]) {
        const a = await n[0].get('/core/clockdrift', headers);
        assert.deepEqual([a.status, a.json?.status, a.json?.data?.code], [200, 'error', 401], a.text);
      }
      const q = await n[0].get('/core/clockdrift?x=1', admin[0]);
      assert.deepEqual([q.status, q.json?.status], [400, 'error']);
      assert.equal((await n[0].get('/core/clockdrift/more', admin[0])).status, 404);
    });

    it('the skewed node logs its drift once, not at every ping round', async () => {
      await eventually(() => warnings(n[2]).length > 0, { what: 'the warning in warn.log' });
      // Three more ping rounds (the measure runs at each), and the route and check measured again meanwhile.
      const since = Math.max(...(data(await n[2].get('/core/peers')) as any[]).map((p) => p.lastPingTime));
      await eventually(
        async () => {
          await drift(n[2]);
          await healthCheck(n[2]);
          const p = data(await n[2].get('/core/peers')) as any[];
          return p.length === 4 && p.every((x) => x.lastPingTime >= since + 3000);
        },
        { what: 'three more ping rounds', everyMs: 300 },
      );
      assert.equal(warnings(n[2]).length, 1, warnings(n[2]).join('\n'));
      assert.match(warnings(n[2])[0], /this node's clock is (599|600)(\.\d+)? s ahead of its peers' \(median\), over the 30 s limit/);
      assert.deepEqual([warnings(n[0]).length, warnings(n[1]).length], [0, 0]);
    });
  });
});
