/**
 * Log answers a tenant can make the node hold. B (the attacker, a paying owner) writes 13 MB to its
 * container's log and asks for all of it eight times at once; A (the victim) reads its own log and stats
 * meanwhile. What the node's RSS does, what each answer holds and what A gets are asserted; the bounds on
 * concurrent log and stats reads (per caller, and on the node) are met over HTTP as an owner sends them.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { TestDocker } from '../support/docker.ts';
import type { Regtest } from '../support/litecoind.ts';
import { component, last, ndjson, until, v8Spec } from '../apps/support.ts';
import { freeTenantPort, registerAndPay, said, paidWorld, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

const LINE = 'x'.repeat(999);
const LINES = 13_000; // 13,000 lines of 1,000 bytes: 13 MB of log
const LOG_BYTES = LINES * (LINE.length + 1) + 'end-of-log\n'.length;
const WRITE_LOG = `L=$(head -c 999 /dev/zero | tr '\\0' x); yes "$L" | head -n ${LINES}; echo end-of-log; trap "exit 0" TERM; sleep 3600 & wait`;
const QUIET = 'echo log-of-a; trap "exit 0" TERM; sleep 3600 & wait';

/** A GET whose answer is not read until `read()`: the client holds the stream open meanwhile. */
interface Held {
  status: number;
  read(): Promise<string>;
  drop(): void;
}
function hold(node: TenantNode, path: string, headers: Record<string, string>): Promise<Held> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: node.port, path, headers }, (res) => {
      res.pause();
      resolve({
        status: res.statusCode ?? 0,
        read: () =>
          new Promise((ok, fail) => {
            const parts: Buffer[] = [];
            res.on('data', (b: Buffer) => parts.push(b));
            res.on('end', () => ok(Buffer.concat(parts).toString('utf8')));
            res.on('error', fail);
            res.resume();
          }),
        drop: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

describe('tenants: log answers (an owner asking for a 13 MB log eight times at once)', function () {
  this.timeout(300_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;
  let registryAddress: string;

  before(async () => {
    ({ docker, ltc, registryAddress } = await paidWorld());
    // The node-wide bound set low enough to be reached by the callers of this test.
    node = await startTenantNode({ docker, ltc, registryAddress, wallets: w, apps: { streams: { perCaller: 4, total: 6 } } });
    for (const [owner, name, script] of [['a', 'tenanta', QUIET], ['b', 'tenantb', WRITE_LOG]] as const) {
      const spec = v8Spec(w[owner].legacyid, name, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: ['/bin/sh', '-c', script] })]);
      await registerAndPay(node, ltc, registryAddress, owner, w, spec);
      const lines = ndjson(await node.get(`/apps/installapplocally/${name}`, node.headers.admin));
      assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    }
    await until('B’s 13 MB written', async () => (await docker.cli(['logs', '--tail', '1', 'coreweb_tenantb'])).trim() === 'end-of-log');
  });
  after(async () => {
    await node?.stop();
    await ltc?.stop();
  });

  it('streams the log without holding it: RSS rises under 50 MB; four of B’s eight are refused (429); A is answered meanwhile', async () => {
    const before = node.rssMb();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, node.rssMb())), 10);
    let answers: any[];
    try {
      // All eight asked at once and none read yet: a served log (13 MB, more than the sockets' buffers
      // take) stays open until its client reads, so the eight are running together.
      const b = await Promise.all(Array.from({ length: 8 }, () => hold(node, '/apps/applog/tenantb/all', node.headers.b)));
      // A, another caller, is answered while B holds its four reads open (4 + 2 under the node's 6).
      const [aLog, aStats] = await Promise.all([node.get('/apps/applog/tenanta', node.headers.a), node.get('/apps/appstats/tenanta', node.headers.a)]);
      assert.equal(aLog.json?.status, 'success', said(aLog));
      assert.match(aLog.json.data, /log-of-a/);
      assert.equal(aStats.json?.status, 'success', said(aStats));
      assert.ok(aStats.json.data.memory_stats, said(aStats));
      const bodies = await Promise.all(b.map((h) => h.read()));
      assert.deepEqual(b.map((h) => h.status), Array(8).fill(200));
      answers = bodies.map((t) => JSON.parse(t));
    } finally {
      clearInterval(sampler);
    }
    const rise = peak - before;
    console.log(`      node RSS ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB: +${rise.toFixed(1)} MB`);
    assert.ok(rise < 50, `RSS rose ${rise.toFixed(1)} MB (${before.toFixed(0)} -> ${peak.toFixed(0)} MB)`);
    const served = answers.filter((x) => x.status === 'success');
    const refused = answers.filter((x) => x.status === 'error');
    assert.equal(served.length, 4, JSON.stringify(refused.map((r) => r.data)));
    for (const s of served) {
      assert.equal(s.data.length, LOG_BYTES);
      assert.ok(s.data.startsWith(`${LINE}\n${LINE}\n`) && s.data.endsWith(`${LINE}\nend-of-log\n`));
    }
    for (const r of refused) {
      assert.equal(r.data.code, 429);
      assert.equal(r.data.name, 'TooManyStreams');
      assert.match(r.data.message, /at most 4 at once per caller/);
    }
    // Every slot was given back: B reads again, and stats too.
    assert.equal((await node.get('/apps/applog/tenantb/1', node.headers.b)).json?.data, 'end-of-log\n');
    assert.equal((await node.get('/apps/appstats/tenantb', node.headers.b)).json?.status, 'success');
    assert.ok(!/handler failed/.test(node.output()), node.output().slice(-2000));
  });

  it('a poll of every line of the 13 MB log holds at most 4 MiB of it: the newest lines, marked truncated', async () => {
    const a = await node.get('/apps/applogpolling/tenantb?lineCount=100000', node.headers.b);
    const d = a.json?.data;
    assert.equal(a.json?.status, 'success', said(a));
    assert.equal(d.truncated, true);
    assert.ok(d.logs.join('').length <= 4 << 20, `${d.logs.join('').length} characters`);
    assert.ok(d.logCount > 4000 && d.logCount < 4300, String(d.logCount));
    assert.match(d.logs.at(-1), /^\S+Z end-of-log$/);
    assert.equal(d.sinceTimestamp, d.logs.at(-1).split(' ')[0]);
  });

  it('the node-wide bound: with six reads running, the next caller is refused by name; slots come back when clients go away', async () => {
    const held = [
      ...(await Promise.all(Array.from({ length: 4 }, () => hold(node, '/apps/applog/tenantb/all', node.headers.b)))),
      ...(await Promise.all(Array.from({ length: 2 }, () => hold(node, '/apps/applog/tenantb/all', node.headers.coreTeam)))),
    ];
    const a = await node.get('/apps/applogpolling/tenanta?lineCount=1', node.headers.a);
    assert.equal(a.status, 200);
    assert.equal(a.json?.data?.code, 429, said(a));
    assert.match(a.json.data.message, /this node is running 6 log or stats reads \(at most 6 at once\)/);
    // Clients that go away without reading give their slots back.
    for (const h of held) h.drop();
    await until('A answered again', async () => (await node.get('/apps/applogpolling/tenanta?lineCount=1', node.headers.a)).json?.data?.logs?.[0]?.endsWith('log-of-a'));
    assert.ok(!node.exited());
  });
});
