/**
 * The DOS sources that need the peer network (plugins/node/dospeers.ts), on two nodes in this process, each
 * a real host serving the node, daemon and peers plugins on its own loopback address (A 127.0.1.2, B
 * 127.0.1.3, membership `open`): too few peers, the node's availability asked of its peer, and public IP
 * changes. Each node's benchmark daemon is the TEST DOUBLE (no public build); the daemon is a real regtest
 * litecoind behind the TEST-ONLY node-RPC double, whose node list B's `checkcoreavailability` reads. A's
 * clock runs `skew` ahead of real time so minutes and hours pass at once; its rounds run every 200 ms.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { resolveConfig } from '../../core/config.ts';
import { Host } from '../../core/host.ts';
import { startBenchmarkDouble, type BenchmarkDouble } from '../support/benchmark-double.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { fetchAnswer, manifestsFor, SAFE_NODE, tempDir } from '../support/node.ts';
import { eventually } from '../support/wait.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble } from './doubles/corenode-rpc-double.ts';

const PORT = 28010;
/** Nothing listens here: the address at which peers cannot reach A. */
const DEAD_PORT = 28011;
const A = '127.0.1.2';
const B = '127.0.1.3';
const C = '127.0.1.6';

type Dos = { dosState: number; dosMessage: string | null };

describe('DOS sources on the peer network (two in-process nodes, benchmark doubles, litecoind behind the node-RPC double)', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let rpc: CorenodeRpcDouble;
  const bench: Record<string, BenchmarkDouble> = {};
  const hosts: Host[] = [];
  const dirs: string[] = [];
  let skew = 0;

  async function startHost(
    ip: string,
    o: { peers: Record<string, unknown>; dos: Record<string, unknown>; clock?: { now(): number }; minimumVersion?: string; onHandler?: (routeId: string) => void },
  ) {
    const dataDir = tempDir('h16b-dos-');
    const manifestsDir = manifestsFor(['daemon', 'peers']);
    dirs.push(dataDir, manifestsDir);
    const config = resolveConfig({
      api: { port: PORT, host: ip },
      dataDir,
      manifestsDir,
      log: { level: process.env.TEST_LOG ?? 'silent' },
      watch: false,
      daemon: { rpc: { url: rpc.url, user: ltc.user, password: ltc.password }, cache: { ttlMs: 0, blockTtlMs: 0 } },
      node: {
        ...SAFE_NODE,
        benchmark: { rpc: { url: bench[ip].url, user: bench[ip].user, password: bench[ip].password }, startCommand: ['false'], updateCommand: ['false'], startWaitMs: 0, stopWaitMs: 0 },
        availability: { timeoutMs: 2000, ...(o.minimumVersion ? { minimumVersion: o.minimumVersion } : {}) },
        dos: o.dos,
      },
      peers: { membership: 'open', maintainMs: 200, backoffBaseMs: 100, backoffMaxMs: 500, handshakeMs: 3000, ...o.peers },
    });
    const host = new Host({ config, clock: o.clock, onHandler: o.onHandler });
    hosts.push(host);
    await host.start();
    await host.listen();
    return host;
  }
  const dosOf = async (ip: string) => (await fetchAnswer(`http://${ip}:${PORT}/core/dosstate`)).json.data as Dos;
  const settles = (want: (d: Dos) => boolean, what: string) => eventually(async () => want(await dosOf(A)), { what, timeoutMs: 30_000 });
  /** `n` more rounds of A (each reads its benchmark's getbenchmarks once). */
  const rounds = async (n: number) => {
    const calls = () => bench[A].calls.filter((c) => c.method === 'getbenchmarks').length;
    const start = calls();
    await eventually(() => calls() >= start + n, { what: `${n} rounds of A`, timeoutMs: 30_000 });
  };

  before(async () => {
    ltc = await startLitecoind();
    rpc = await startCorenodeRpcDouble(ltc);
    // Not registered (no collateral): no collision check. Listed: both nodes, and A at a port where it is not.
    // (`A` alone is A at 16127, where nothing listens.)
    rpc.nodeList = [{ ip: `${A}:${PORT}` }, { ip: `${B}:${PORT}` }, { ip: `${A}:${DEAD_PORT}` }, { ip: A }];
    for (const ip of [A, B]) {
      bench[ip] = await startBenchmarkDouble();
      bench[ip].state.version = '6.2.0';
      bench[ip].state.ipaddress = `${ip}:${PORT}`;
    }
    // A needs one incoming peer; it dials nobody.
    await startHost(A, {
      peers: { minimums: { outgoing: 0, uniqueOutgoingIps: 0, incoming: 1, uniqueIncomingIps: 1 } },
      dos: { intervalSeconds: 0.2 },
      clock: { now: () => Date.now() + skew },
    });
  });
  after(async () => {
    for (const h of hosts) await h.close();
    for (const b of Object.values(bench)) await b.close();
    await rpc?.close();
    await ltc?.stop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('too few peers: +0.13 for each minute without them; a peer that dials in resets the counter', async () => {
    await settles((d) => /Not enough connections to the Core network: 0 incoming connections of the 1 needed/.test(d.dosMessage ?? ''), 'the shortfall to be named');
    const before = (await dosOf(A)).dosState;
    skew += 10 * 60_000;
    await settles((d) => d.dosState >= before + 1.3, 'ten minutes to be charged');
    const after = (await dosOf(A)).dosState;
    // 1.3 for the ten minutes, plus 0.13 a minute of the real time the rounds took (a few seconds).
    assert.ok(after >= before + 1.3 && after < before + 1.4, `${before} -> ${after}`);
    // B dials A: A has its incoming peer, B reaches A at its public address: every check passes.
    await startHost(B, { peers: { seeds: [`${A}:${PORT}`], minimums: { outgoing: 0, uniqueOutgoingIps: 0, incoming: 0, uniqueIncomingIps: 0 } }, dos: { intervalSeconds: 0 } });
    await settles((d) => d.dosState === 0 && d.dosMessage === null, 'the counter to reset');
  });

  it('availability: +2 a round while the peer cannot reach the node at its public address; no verdict when the peer does not list it', async () => {
    bench[A].state.ipaddress = `${A}:${DEAD_PORT}`;
    await settles((d) => d.dosState >= 4, 'two failed tries');
    assert.match((await dosOf(A)).dosMessage!, new RegExp(`Core ${A}:${DEAD_PORT} is not reachable by its peers: ${B}:${PORT} \\(Asking Core ${A}:${DEAD_PORT} is not available`));
    assert.equal((await dosOf(A)).dosState % 2, 0);
    bench[A].state.ipaddress = `${A}:${PORT}`;
    await settles((d) => d.dosState === 0, 'the counter to reset');
    // Not in B's node list at that port: B answers NotConfirmed, which says nothing of A's reachability.
    bench[A].state.ipaddress = `${A}:${DEAD_PORT + 1}`;
    await rounds(3);
    assert.deepEqual(await dosOf(A), { dosState: 0, dosMessage: null });
    // No port from the benchmark: peers are asked about the port A listens on (not 16127, where it is not).
    bench[A].state.ipaddress = A;
    await rounds(3);
    assert.deepEqual(await dosOf(A), { dosState: 0, dosMessage: null });
    bench[A].state.ipaddress = `${A}:${PORT}`;
  });

  it('public IP: one change passes, a second within 20 h adds 11 and holds the ban until it is 20 h old', async () => {
    // Not listed at these IPs, so B gives no verdict on reachability (above): only the IP history counts.
    bench[A].state.ipaddress = `127.0.1.4:${PORT}`;
    await rounds(3);
    assert.deepEqual(await dosOf(A), { dosState: 0, dosMessage: null });
    bench[A].state.ipaddress = `127.0.1.5:${PORT}`;
    await settles((d) => d.dosState >= 11, 'the second change to be charged');
    assert.deepEqual(await dosOf(A), { dosState: 11, dosMessage: 'Node is banned (DOS 11): The public IP of the node changed 2 times within 20 h (now 127.0.1.5)' });
    const changes = hosts[0].events.since(0).filter((e) => e.name === 'node:ipchanged').map((e) => e.data);
    assert.deepEqual(changes, [
      { from: A, to: '127.0.1.4', changesWithin20h: 1 },
      { from: '127.0.1.4', to: '127.0.1.5', changesWithin20h: 2 },
    ]);
    await rounds(3);
    assert.equal((await dosOf(A)).dosState, 11, 'held, not added again');
    skew += 20 * 3600_000;
    await settles((d) => d.dosState === 0, 'the changes to leave the window');
    bench[A].state.ipaddress = `${A}:${PORT}`;
    await rounds(3);
    assert.deepEqual(await dosOf(A), { dosState: 0, dosMessage: null });
  });

  it('a peer that says the node is unreachable is outvoted by one that reaches it', async () => {
    // C wants a version no node has: it answers NotAvailable for A, while B reaches A.
    let asked = 0;
    const onHandler = (id: string) => void (id === 'node.checkcoreavailability' && asked++);
    bench[C] = await startBenchmarkDouble();
    await startHost(C, { peers: { seeds: [`${A}:${PORT}`], minimums: { outgoing: 0, uniqueOutgoingIps: 0, incoming: 0, uniqueIncomingIps: 0 } }, dos: { intervalSeconds: 0 }, minimumVersion: '99.0.0', onHandler });
    // A asks its peers in random order until one says available: C is asked first in about every other round.
    await eventually(() => asked >= 3, { what: 'C to be asked three times', timeoutMs: 30_000 });
    assert.equal((await fetchAnswer(`http://${C}:${PORT}/core/checkcoreavailability/${A}/${PORT}`)).json.data.name, 'NotAvailable');
    assert.deepEqual(await dosOf(A), { dosState: 0, dosMessage: null });
  });
});
