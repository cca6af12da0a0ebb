/**
 * The peer protocol at scale: 1,000 PeerNodes (the plugin's own protocol code) on an in-memory transport
 * with virtual time. Each node keeps 8 outgoing peers (the reference's count) and accepts at most 40
 * incoming (assumed: the reference's cap is not shown); link latency 10-100 ms, fixed per pair. One node
 * broadcasts; the figures are the virtual time and hops until 99% and 100% of the nodes hold the message,
 * the copies each node receives beyond the first, and the gossip bytes each node sends. The baseline,
 * measured on the same links in the same run, is the shortest-path time (Dijkstra): the best any
 * protocol could do. Signing and checking cost CPU time, not virtual time (measured separately below).
 *
 *   npm run bench:peers-sim [-- --nodes 1000 --broadcasts 5]
 */
import { generateKeys } from '../../plugins/peers/protocol/keys.ts';
import { MemoryNetwork, VirtualTime } from '../../plugins/peers/protocol/memory.ts';
import { PeerNode } from '../../plugins/peers/protocol/node.ts';

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const N = arg('nodes', 1000);
const BROADCASTS = arg('broadcasts', 5);
const OUT = 8;
const IN = 40;
const PORT = 16127;

const ipOf = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
const idx = new Map<string, number>();
// A fixed pseudo-random latency per pair (symmetric), 10-100 ms.
const latency = (a: string, b: string) => {
  const x = idx.get(a)!;
  const y = idx.get(b)!;
  const h = (Math.min(x, y) * 7919 + Math.max(x, y) * 104729) % 9973;
  return 10 + (h % 91);
};

async function main() {
  // CPU time, not wall time: the shared machine's load would inflate the latter.
  const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
  const wall = cpu();
  const sched = new VirtualTime();
  const net = new MemoryNetwork(sched, latency);
  const nodes: PeerNode[] = [];
  for (let i = 0; i < N; i++) {
    const ip = ipOf(i + 1);
    idx.set(ip, i);
    const node = new PeerNode(generateKeys(), net.transport(ip), { ip, port: PORT, seeds: [], maxOutgoing: OUT, maxIncoming: IN, keepMs: 1e12, textBurst: 10_000, textPerSecond: 10_000 }, {
      now: () => sched.now(),
      setTimer: (fn, ms) => sched.at(ms, fn),
    });
    net.listen(ip, PORT, (l) => node.accept(l));
    nodes.push(node);
  }
  // What peers would have told each node: 60 random addresses; then rounds of topping up outgoing peers.
  for (const node of nodes) for (let k = 0; k < 60; k++) node.learn(`${ipOf(1 + Math.floor(Math.random() * N))}:${PORT}`, 'peer');
  for (let round = 0; round < 6; round++) {
    for (const node of nodes) node.maintain();
    await sched.run(sched.now() + 11_000);
  }
  const outs = nodes.map((x) => x.outgoing().length);
  const ins = nodes.map((x) => x.incoming().length);
  const meshMs = cpu() - wall;

  // Shortest-path baseline over the open links (each undirected link once per direction it exists).
  const adj: number[][] = nodes.map(() => []);
  for (let i = 0; i < N; i++) for (const c of nodes[i].conns) if (c.state === 'open') adj[i].push(idx.get(c.ip)!);
  const dijkstra = (src: number) => {
    const dist = new Array(N).fill(Infinity);
    dist[src] = 0;
    const done = new Array(N).fill(false);
    for (let k = 0; k < N; k++) {
      let u = -1;
      for (let v = 0; v < N; v++) if (!done[v] && (u < 0 || dist[v] < dist[u])) u = v;
      if (u < 0 || dist[u] === Infinity) break;
      done[u] = true;
      for (const v of adj[u]) {
        const d = dist[u] + latency(ipOf(u + 1), ipOf(v + 1));
        if (d < dist[v]) dist[v] = d;
      }
    }
    return dist;
  };

  const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * p) - 1)];
  const rows: Record<string, number>[] = [];
  let cpuMs = 0;
  let bodyBytes = 0;
  for (let b = 0; b < BROADCASTS; b++) {
    const src = Math.floor(Math.random() * N);
    const first = new Map<number, { t: number; hops: number }>();
    const offs = nodes.map((node, i) => node.onAny(() => !first.has(i) && first.set(i, { t: sched.now(), hops: 0 })));
    const hopOffs = nodes.map((node, i) => node.onAny((m) => (first.get(i)!.hops = m.hops)));
    const dup0 = nodes.map((x) => x.stats.duplicates);
    const bytes0 = nodes.map((x) => x.stats.gossipBytesSent);
    const t0 = sched.now();
    const c0 = cpu();
    const hash = nodes[src].broadcast('broadcastmessage', { n: b, text: 'a message of about a hundred bytes, as a short broadcastmessage is' });
    bodyBytes = nodes[src].keptMessages().find((k) => k.hash === hash)!.m.length;
    await sched.run();
    cpuMs += cpu() - c0;
    offs.forEach((f) => f());
    hopOffs.forEach((f) => f());
    const times = [...first.values()].map((x) => x.t - t0).sort((a, z) => a - z);
    const hops = [...first.values()].map((x) => x.hops).sort((a, z) => a - z);
    const best = dijkstra(src).filter((_, i) => i !== src).sort((a, z) => a - z);
    const others = N - 1;
    const dups = nodes.map((x, i) => x.stats.duplicates - dup0[i]);
    const bytes = nodes.map((x, i) => x.stats.gossipBytesSent - bytes0[i]);
    rows.push({
      reached: first.size / others,
      t99: pct(times, 0.99),
      t100: first.size === others ? times.at(-1)! : NaN,
      best99: pct(best, 0.99),
      best100: best.at(-1)!,
      hops99: pct(hops, 0.99),
      hops100: hops.at(-1)!,
      dupsPerNode: dups.reduce((a, z) => a + z, 0) / N,
      bytesPerNode: bytes.reduce((a, z) => a + z, 0) / N,
    });
  }
  const avg = (k: string) => rows.reduce((a, r) => a + r[k], 0) / rows.length;
  const f = (x: number, d = 0) => x.toFixed(d);
  console.log(`peers-sim: ${N} nodes, ${OUT} outgoing / at most ${IN} incoming each, link latency 10-100 ms, ${BROADCASTS} broadcasts from random nodes`);
  console.log(`mesh: outgoing per node min ${Math.min(...outs)} mean ${f(outs.reduce((a, z) => a + z) / N, 2)}; incoming min ${Math.min(...ins)} max ${Math.max(...ins)} mean ${f(ins.reduce((a, z) => a + z) / N, 2)} (built in ${f(meshMs)} ms of CPU)`);
  console.log(`reached: ${f(avg('reached') * 100, 2)}% of the other nodes`);
  console.log(`time to 99%: ${f(avg('t99'))} ms (shortest paths: ${f(avg('best99'))} ms, ratio ${f(avg('t99') / avg('best99'), 2)})`);
  console.log(`time to 100%: ${f(avg('t100'))} ms (shortest paths: ${f(avg('best100'))} ms, ratio ${f(avg('t100') / avg('best100'), 2)})`);
  console.log(`hops to 99%: ${f(avg('hops99'), 1)}; to 100%: ${f(avg('hops100'), 1)}`);
  console.log(`duplicate deliveries per node per broadcast: ${f(avg('dupsPerNode'), 1)} (dropped by the seen-cache; each node delivers the message once)`);
  console.log(`gossip bytes sent per node per broadcast: ${f(avg('bytesPerNode'))} (the signed body is ${bodyBytes} bytes: ${f(avg('bytesPerNode') / bodyBytes, 1)}x)`);
  console.log(`CPU per broadcast across all nodes (signing, checking, JSON): ${f(cpuMs / BROADCASTS)} ms (${f((cpuMs / BROADCASTS) / N, 2)} ms per node)`);
  for (const node of nodes) node.stop();
}

void main();
