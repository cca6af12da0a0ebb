/**
 * Benchmark routes through a real node to the benchmark daemon's JSON-RPC test double over real HTTP:
 * answers relayed as they are, levels of the reference, bad input refused before any call, a dead or
 * hanging benchmark daemon answered with one clear error.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_CORE_TEAM } from '../../core/config.ts';
import { startBenchmarkDouble, type BenchmarkDouble } from '../support/benchmark-double.ts';
import { startNode, tempDir, type TestNode } from '../support/node.ts';
import { OPERATOR, USER as MEMBER, isolatedPlugins, sessionFor as authAs } from '../support/fixture.ts';
import { err, ok } from '../support/envelope.ts';

const CORE_TEAM = DEFAULT_CORE_TEAM[0];

async function startBenchmarkNode(benchmark: Record<string, unknown>): Promise<TestNode> {
  const dirs = isolatedPlugins('daemon', 'benchmark');
  const node = await startNode({ manifestsDir: dirs.manifestsDir, config: { pluginsDir: dirs.pluginsDir, initial: { legacyid: OPERATOR }, benchmark } });
  const close = node.close;
  node.close = async (o) => (await close(o), dirs.cleanup());
  return node;
}

describe('benchmark relay (JSON-RPC test double of the benchmark daemon)', function () {
  this.timeout(60_000);
  let bench: BenchmarkDouble;
  let node: TestNode;

  before(async () => {
    bench = await startBenchmarkDouble();
    node = await startBenchmarkNode({ rpc: { url: bench.url, user: bench.user, password: bench.password } });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      await bench?.close();
    }
  });
  beforeEach(() => {
    bench.calls.length = 0;
    bench.state = { benchmarking: 'CUMULUS', backend: true, running: true };
  });

  it('relays status, results, info and help to anyone', async () => {
    assert.deepEqual(ok(await node.get('/benchmark/getstatus')), { status: 'online', benchmarking: 'CUMULUS', core: true });
    const results = ok(await node.get('/benchmark/getbenchmarks'));
    assert.equal(results.status, 'CUMULUS');
    assert.equal(results.ipaddress, '203.0.113.7:16127');
    assert.deepEqual(ok(await node.get('/benchmark/getinfo')), { version: '4.0.0', rpcport: bench.port });
    assert.match(ok(await node.get('/benchmark/help')), /getbenchmarks/);
    assert.match(ok(await node.get('/benchmark/help/getstatus')), /Help for the getstatus call/);
    assert.match(ok(await node.get('/benchmark/help?command=stop')), /Help for the stop call/);
    assert.deepEqual(bench.calls.map((c) => [c.method, c.params]), [
      ['getstatus', []], ['getbenchmarks', []], ['getinfo', []], ['help', ['']], ['help', ['getstatus']], ['help', ['stop']],
    ]);
  });

  it('refuses restart, stop and signing to anonymous callers and users (401), never calling the daemon', async () => {
    for (const headers of [undefined, authAs(MEMBER)]) {
      for (const p of ['/benchmark/restartnodebenchmarks', '/benchmark/stop', '/benchmark/signcorenodetransaction/abcd', '/benchmark/signlegacynodetransaction/abcd'])
        assert.deepEqual(err(await node.get(p, headers)), { code: 401, name: 'Unauthorized', message: 'Unauthorized. Access denied.' }, p);
      for (const p of ['/benchmark/signcorenodetransaction', '/benchmark/signlegacynodetransaction'])
        assert.equal(err(await node.post(p, { hexstring: 'abcd' }, headers)).code, 401, p);
    }
    // The core team may restart the benchmarks, but neither stop the daemon nor sign for the node.
    assert.equal(err(await node.get('/benchmark/stop', authAs(CORE_TEAM))).code, 401);
    assert.equal(err(await node.get('/benchmark/signcorenodetransaction/abcd', authAs(CORE_TEAM))).code, 401);
    assert.deepEqual(bench.calls, []);
  });

  it('lets the operator sign (GET, POST, legacy aliases), restart the benchmarks and stop the daemon', async () => {
    const hex = '0400008085202f89';
    assert.equal(ok(await node.get(`/benchmark/signcorenodetransaction/${hex}`, authAs(OPERATOR))), bench.signed(hex));
    assert.equal(ok(await node.get(`/benchmark/signlegacynodetransaction?hexstring=${hex}`, authAs(OPERATOR))), bench.signed(hex));
    assert.equal(ok(await node.post('/benchmark/signcorenodetransaction', { hexstring: hex }, authAs(OPERATOR))), bench.signed(hex));
    assert.equal(ok(await node.post('/benchmark/signlegacynodetransaction', { hexstring: hex }, { ...authAs(OPERATOR), 'content-type': 'application/json' })), bench.signed(hex));
    assert.deepEqual(bench.calls.map((c) => c.method), Array(4).fill('signlegacynodetransaction'));
    assert.equal(ok(await node.get('/benchmark/restartnodebenchmarks', authAs(CORE_TEAM))), 'Restarting node benchmarks');
    assert.equal(ok(await node.get('/benchmark/restartnodebenchmarks', authAs(OPERATOR))), 'Restarting node benchmarks');
    assert.equal(ok(await node.get('/benchmark/getstatus')).benchmarking, 'running');
    assert.equal(ok(await node.get('/benchmark/stop', authAs(OPERATOR))), 'Benchmark daemon stopping');
    assert.equal(ok(await node.get('/benchmark/getstatus')).status, 'offline');
  });

  it('refuses bad input before calling the daemon', async () => {
    const refusals: [Promise<any>, RegExp][] = [
      [node.get('/benchmark/signcorenodetransaction', authAs(OPERATOR)), /hexstring is required/],
      [node.get(`/benchmark/signcorenodetransaction/${encodeURIComponent('ab;stop')}`, authAs(OPERATOR)), /hexstring is not in the expected form/],
      [node.post('/benchmark/signcorenodetransaction', { hexstring: 12 }, authAs(OPERATOR)), /hexstring must be a string/],
      [node.post('/benchmark/signcorenodetransaction', { hexstring: 'ab'.repeat(100_001) }, authAs(OPERATOR)), /hexstring is longer than 200000/],
      [node.post('/benchmark/signcorenodetransaction', ['ab'], authAs(OPERATOR)), /body must be a JSON object/],
      [node.get(`/benchmark/help/${encodeURIComponent('stop"')}`), /command is not in the expected form/],
    ];
    for (const [answer, pattern] of refusals) {
      const e = err(await answer);
      assert.deepEqual([e.code, e.name], [400, 'ValidationError']);
      assert.match(e.message, pattern);
    }
    const big = await node.post('/benchmark/signcorenodetransaction', JSON.stringify({ hexstring: 'ab'.repeat(200_000) }), authAs(OPERATOR));
    assert.equal(big.status, 413);
    assert.deepEqual(bench.calls, []);
  });

  it('reports the benchmark daemon in /core/health without gating login', async () => {
    const check = ok(await node.get('/core/health', authAs(OPERATOR))).checks.find((c: any) => c.name === 'benchmark');
    assert.deepEqual([check.ok, check.required], [true, false]);
    assert.match(check.message, /online, CUMULUS/);
  });
});

describe('benchmark relay: credentials, a dead and a hanging benchmark daemon', function () {
  this.timeout(60_000);

  it('reads credentials and port from the benchmark config file; wrong credentials are a clear error', async () => {
    const bench = await startBenchmarkDouble();
    const dir = tempDir('corenode-bench-conf-');
    const conf = path.join(dir, 'benchmark.conf');
    fs.writeFileSync(conf, `rpcuser=${bench.user}\nrpcpassword=${bench.password}\ntestnet=1\n[test]\nrpcport=${bench.port}\n`);
    let node = await startBenchmarkNode({ confFile: conf });
    try {
      assert.equal(ok(await node.get('/benchmark/getstatus')).status, 'online');
      await node.close();
      node = await startBenchmarkNode({ rpc: { url: bench.url, user: bench.user, password: 'wrong' } });
      const e = err(await node.get('/benchmark/getstatus'));
      assert.deepEqual([e.code, e.name], [503, 'BenchmarkUnreachable']);
      assert.match(e.message, /refused the RPC credentials \(HTTP 401\)/);
    } finally {
      await node.close();
      await bench.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a dead benchmark daemon is one clear error and a failing, non-gating health check', async () => {
    const bench = await startBenchmarkDouble();
    const url = bench.url;
    await bench.close();
    const node = await startBenchmarkNode({ rpc: { url, user: 'u', password: 'p' } });
    try {
      const e = err(await node.get('/benchmark/getstatus'));
      assert.deepEqual([e.code, e.name], [503, 'BenchmarkUnreachable']);
      assert.match(e.message, /^The benchmark daemon is unreachable at /);
      const check = ok(await node.get('/core/health', authAs(OPERATOR))).checks.find((c: any) => c.name === 'benchmark');
      assert.deepEqual([check.ok, check.required], [false, false]);
    } finally {
      await node.close();
    }
  });

  it('a hanging benchmark daemon times out; unknown calls come back as its own error', async () => {
    const bench = await startBenchmarkDouble();
    const node = await startBenchmarkNode({ rpc: { url: bench.url, user: bench.user, password: bench.password }, timeoutMs: 300, methods: { getinfo: 'nosuchcall' } });
    try {
      const missing = err(await node.get('/benchmark/getinfo'));
      assert.deepEqual(missing, { code: -32601, name: 'MethodNotFound', message: 'Method not found' });
      bench.mode = 'hang';
      const e = err(await node.get('/benchmark/getbenchmarks'));
      assert.deepEqual([e.code, e.name], [504, 'BenchmarkTimeout']);
      assert.equal(ok(await node.get('/core/version')).length > 0, true);
    } finally {
      await node.close();
      await bench.close();
    }
  });
});
