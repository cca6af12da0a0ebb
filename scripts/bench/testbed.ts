/**
 * The peer network on real hosts (test/support/testbed, as root): the 8-node network of the scenario tests
 * (two nodes behind one UPnP router, three sharing one public IP, three serving HTTPS, one of them
 * IPv6-only), started cold with the node list only. Figures:
 * - the time from the start of the processes until every node meets its link minimums;
 * - 20 broadcasts from random nodes: the time until the last of the 7 others holds each one (median and
 *   worst of 20; each receiver's clock against the sender's: one machine, one clock), and the gossip bytes
 *   each node sent per broadcast;
 * - the baseline, measured in the same run: the same 20 broadcasts on the same links (the links the nodes
 *   actually opened, with the one-way latency their pings measured) in the simulation of `bench:peers-sim`
 *   (the protocol code on the in-memory transport, virtual time). The ratios say how far processes, sockets
 *   and TLS take the real network from what the protocol alone predicts.
 *
 *   npm run bench:testbed [-- --broadcasts 20]
 */
import path from 'node:path';
import { Testbed, type TestbedNode } from '../../test/support/testbed/index.ts';
import { MESH, meshNetwork } from '../../test/support/testbed/networks.ts';
import { login } from '../../test/support/wallets.ts';
import { eventually } from '../../test/support/wait.ts';
import { loadOrCreateKeys, generateKeys } from '../../plugins/peers/protocol/keys.ts';
import { MemoryNetwork, VirtualTime } from '../../plugins/peers/protocol/memory.ts';
import { PeerNode } from '../../plugins/peers/protocol/node.ts';

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const BROADCASTS = arg('broadcasts', 20);

const data = (a: { json?: any; status: number; text: string }) => {
  if (a.json?.status !== 'success') throw new Error(`not a success: ${a.status} ${a.text.slice(0, 300)}`);
  return a.json.data;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

interface Peer {
  nodeKey: string;
  direction: 'outbound' | 'inbound';
  latency: number;
}

async function main() {
  const tb = await Testbed.start(meshNetwork());
  try {
    const nodes = MESH.map((n) => tb.node(n));
    const ok = async (n: TestbedNode) => (await n.get('/core/checkcommunication').catch(() => null))?.json?.status === 'success';
    const t0 = Date.now();
    await Promise.all(nodes.map((n) => n.start()));
    const up = Date.now() - t0;
    await eventually(async () => (await Promise.all(nodes.map(ok))).every(Boolean), { what: 'all 8 at their minimums', everyMs: 100, timeoutMs: 120_000 });
    const meshed = Date.now() - t0;
    // Let pings measure every link's latency before it is read.
    await eventually(async () => (await Promise.all(nodes.map(async (n) => data(await n.get('/core/peers')) as Peer[]))).every((l) => l.every((p) => p.latency >= 0)), { what: 'every link pinged', everyMs: 500, timeoutMs: 60_000 });

    const keyOf = (n: TestbedNode) => loadOrCreateKeys(path.join(n.dataDir, 'peers', 'node-key.pem')).publicKey;
    const keys = nodes.map(keyOf);
    const links = await Promise.all(nodes.map(async (n) => data(await n.get('/core/peers')) as Peer[]));
    const edges: { from: number; to: number; ms: number }[] = [];
    links.forEach((l, i) => {
      for (const p of l) if (p.direction === 'outbound' && keys.includes(p.nodeKey)) edges.push({ from: i, to: keys.indexOf(p.nodeKey), ms: Math.max(0, p.latency) / 2 });
    });

    const auth = await Promise.all(nodes.map(async (n) => ({ legacyidauth: (await login(n, n.operator)).header })));
    const health = async () => Promise.all(nodes.map(async (n) => data(await n.get('/core/networkhealth')).messages as { gossipBytesSent: number; recent: { data?: any; sentAt: number; receivedAt: number }[] }));
    const origins: number[] = [];
    const times: number[] = [];
    const bytes0 = (await health()).reduce((a, h) => a + h.gossipBytesSent, 0);
    for (let b = 0; b < BROADCASTS; b++) {
      const src = Math.floor(Math.random() * nodes.length);
      origins.push(src);
      const tag = `bench-${b}-${Date.now()}`;
      data(await nodes[src].post('/core/broadcastmessage', { tag, text: 'a message of about a hundred bytes, as a short broadcastmessage is' }, auth[src]));
      let got: number[] = [];
      await eventually(
        async () => {
          const h = await health();
          got = h.flatMap((x, i) => (i === src ? [] : x.recent.filter((m) => m.data?.tag === tag).map((m) => m.receivedAt - m.sentAt)));
          return got.length === nodes.length - 1;
        },
        { what: `broadcast ${b} on all`, everyMs: 50, timeoutMs: 30_000 },
      );
      times.push(Math.max(...got));
    }
    const bytes = ((await health()).reduce((a, h) => a + h.gossipBytesSent, 0) - bytes0) / BROADCASTS / nodes.length;

    // The same links and broadcasts in the simulation.
    const sched = new VirtualTime();
    const lat = new Map(edges.map((e) => [`${e.from}-${e.to}`, e.ms]));
    const ipOf = (i: number) => `10.0.0.${i + 1}`;
    const net = new MemoryNetwork(sched, (a, z) => {
      const [x, y] = [Number(a.split('.')[3]) - 1, Number(z.split('.')[3]) - 1];
      return lat.get(`${x}-${y}`) ?? lat.get(`${y}-${x}`) ?? 0;
    });
    const sims = nodes.map((_, i) => {
      const n = new PeerNode(generateKeys(), net.transport(ipOf(i)), { ip: ipOf(i), port: 16127, seeds: [], maxOutgoing: 0 }, { now: () => sched.now(), setTimer: (fn, ms) => sched.at(ms, fn) });
      net.listen(ipOf(i), 16127, (l) => n.accept(l));
      return n;
    });
    for (const e of edges) await sims[e.from].connect(`${ipOf(e.to)}:16127`);
    await sched.run(sched.now() + 5_000);
    const simTimes: number[] = [];
    const simBytes0 = sims.reduce((a, s) => a + s.stats.gossipBytesSent, 0);
    for (const src of origins) {
      let last = 0;
      const offs = sims.map((s) => s.onAny(() => (last = Math.max(last, sched.now()))));
      const at = sched.now();
      sims[src].broadcast('broadcastmessage', { tag: 'sim', text: 'a message of about a hundred bytes, as a short broadcastmessage is' });
      await sched.run(sched.now() + 10_000);
      offs.forEach((f) => f());
      simTimes.push(last - at);
    }
    const simBytes = (sims.reduce((a, s) => a + s.stats.gossipBytesSent, 0) - simBytes0) / BROADCASTS / sims.length;
    for (const s of sims) s.stop();

    const f = (x: number, d = 1) => x.toFixed(d);
    const ratio = (a: number, z: number) => (z > 0 ? f(a / z, 2) : `∞ (the simulation's links take ${f(z, 2)} ms)`);
    console.log(`bench:testbed: 8 node processes on their own hosts, ${edges.length} links (${edges.filter((e) => e.ms > 0).length} with a measured latency), ${BROADCASTS} broadcasts`);
    console.log(`cold start: processes answering after ${f(up / 1000)} s; every node at its minimums after ${f(meshed / 1000)} s`);
    console.log(`broadcast to all 8: median ${f(median(times))} ms, worst ${f(Math.max(...times))} ms; simulation on the same links: median ${f(median(simTimes), 2)} ms, worst ${f(Math.max(...simTimes), 2)} ms (ratio of medians ${ratio(median(times), median(simTimes))})`);
    console.log(`gossip bytes sent per node per broadcast: ${f(bytes, 0)}; simulation: ${f(simBytes, 0)} (ratio ${ratio(bytes, simBytes)})`);
  } finally {
    await tb.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
