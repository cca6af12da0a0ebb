/**
 * The DOS counter's sources (plugins/node/dossources.ts): the benchmark daemon (TEST DOUBLE: it has no
 * public build) tells its version and the node's public IP; the daemon (a real regtest litecoind behind the
 * TEST-ONLY node-RPC double) tells the node status and the node list. Rounds run every 200 ms here.
 */
import assert from 'node:assert/strict';
import { startBenchmarkDouble, type BenchmarkDouble } from '../support/benchmark-double.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble } from './doubles/corenode-rpc-double.ts';
import { asOperator, ok, startOpsNode, waitFor } from './support.ts';

const TXID = 'ab'.repeat(32);

describe('DOS counter sources (benchmark double, litecoind behind the node-RPC double)', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let rpc: CorenodeRpcDouble;
  let bench: BenchmarkDouble;
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  const dos = async () => ok(await node.get('/core/dosstate')) as { dosState: number; dosMessage: string | null };
  const settles = (want: (d: { dosState: number; dosMessage: string | null }) => boolean, what: string) => waitFor(async () => want(await dos()), 20_000, what);
  const healthy = async () => (ok(await node.get('/core/health', asOperator())).checks as { name: string; ok: boolean }[]).find((c) => c.name === 'dos')!.ok;

  before(async () => {
    ltc = await startLitecoind();
    rpc = await startCorenodeRpcDouble(ltc);
    bench = await startBenchmarkDouble();
    rpc.status = { status: 'CONFIRMED', collateral: `COutPoint(${TXID}, 0)` };
    rpc.nodeList = [{ ip: '203.0.113.7', txhash: TXID, outidx: '0' } as { ip: string }];
    node = await startOpsNode({
      withDaemon: true,
      daemon: { rpc: { url: rpc.url, user: ltc.user, password: ltc.password }, cache: { ttlMs: 0, blockTtlMs: 0 } },
      node: {
        benchmark: { rpc: { url: bench.url, user: bench.user, password: bench.password }, startCommand: ['false'], updateCommand: ['true'], startWaitMs: 0, stopWaitMs: 0 },
        dos: { intervalSeconds: 0.2, benchmarkMinimumVersion: '4.0.0' },
      },
    });
  });
  after(async () => {
    await node?.close();
    await bench?.close();
    await rpc?.close();
    await ltc?.stop();
  });

  it('stays at 0 while every check passes', async () => {
    await waitFor(() => bench.calls.filter((c) => c.method === 'getbenchmarks').length >= 3, 20_000, 'three rounds');
    assert.deepEqual(await dos(), { dosState: 0, dosMessage: null });
    assert.equal(await healthy(), true);
  });

  it('adds 11 for a benchmark below the minimum version (banned: the dos check fails), and resets once it passes', async () => {
    bench.state.version = '3.9.9';
    await settles((d) => d.dosState >= 11, 'the counter to reach 11');
    assert.match((await dos()).dosMessage!, /Benchmark version 3\.9\.9 is below the minimum 4\.0\.0/);
    assert.equal(await healthy(), false);
    bench.state.version = '4.0.0';
    await settles((d) => d.dosState === 0 && d.dosMessage === null, 'the counter to reset');
    assert.equal(await healthy(), true);
  });

  it('adds 15 when the benchmark cannot tell the public IP', async () => {
    bench.state.ipaddress = null;
    await settles((d) => d.dosState >= 15, 'the counter to reach 15');
    assert.match((await dos()).dosMessage!, /public IP of the node cannot be obtained/);
    bench.state.ipaddress = '203.0.113.7:16127';
    await settles((d) => d.dosState === 0, 'the counter to reset');
  });

  it('goes to 100 when the collateral is confirmed at another address (collision)', async () => {
    rpc.nodeList = [{ ip: '198.51.100.9:16137', txhash: TXID, outidx: '0' } as { ip: string }];
    await settles((d) => d.dosState === 100, 'the counter to reach 100');
    assert.match((await dos()).dosMessage!, /Collision: the collateral of this node \(203\.0\.113\.7:16127\) is confirmed at 198\.51\.100\.9:16137/);
    rpc.nodeList = [{ ip: '203.0.113.7:16127', txhash: TXID, outidx: '0' } as { ip: string }];
    await settles((d) => d.dosState === 0, 'the counter to reset');
  });
});
