/**
 * Issue 11 findings on request bodies and the host's edges, each performed against a real node process:
 * unfinished bodies (memory), oversized bodies (413 seen, not a reset), deep JSON, CORS, HEAD, and what
 * `/core/health` shows to whom.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { bitcoinWallet } from '../support/wallets.ts';
import { during, spawnNode, type NodeProcess } from './node-process.ts';

const log = (...a: unknown[]) => process.env.ATTACK_LOG && console.log(...a);
const operator = bitcoinWallet();

/** Log in through the node's own routes; the legacyidauth header value. */
async function login(node: NodeProcess): Promise<string> {
  const phrase = await node.get('/id/loginphrase');
  assert.equal(phrase.json?.status, 'success', phrase.text);
  const loginPhrase: string = phrase.json.data;
  const signature = await operator.sign(loginPhrase);
  const res = await node.post('/id/verifylogin', { legacyid: operator.legacyid, loginPhrase, signature });
  assert.equal(res.json?.status, 'success', res.text);
  return new URLSearchParams({ legacyid: operator.legacyid, signature, loginPhrase }).toString();
}

/** Send a raw request (headers, then the body in one write) and report what came back before the close. */
function rawExchange(port: number, head: string, body: Buffer): Promise<{ text: string; error?: string }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    let error: string | undefined;
    s.on('connect', () => {
      s.write(head);
      s.write(body);
    });
    s.on('data', (b) => (text += b.toString('latin1')));
    s.on('error', (e: NodeJS.ErrnoException) => (error ??= e.code));
    s.on('close', () => resolve({ text, error }));
    setTimeout(() => s.destroy(), 20_000).unref();
  });
}

describe('attack: request bodies and edges (real node process)', function () {
  this.timeout(120_000);
  let node: NodeProcess;
  let auth: string;

  before(async function () {
    this.timeout(90_000);
    node = await spawnNode({ extraYaml: `initial: { legacyid: ${operator.legacyid} }\n` });
    auth = await login(node);
  });

  after(async () => {
    await node?.stop();
  });

  it('unfinished bodies: 1,000 connections sending 2.2 MB each and stalling hold bounded memory and are cut within seconds', async () => {
    const body = Buffer.alloc(2_200_000, 'a');
    // 2.25 MB declared (under the route's 2200kb limit), 2.2 MB sent, then nothing: the body never ends.
    const head = 'POST /daemon/decoderawtransaction HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 2250000\r\n\r\n';
    const start = Date.now();
    const startRss = node.rssMb();
    let peakRss = startRss;
    const sampler = setInterval(() => (peakRss = Math.max(peakRss, node.rssMb())), 200);
    let open = 0;
    let answered503 = 0;
    const closedAt: number[] = [];
    // For each connection whose 2.2 MB were all sent: from the stall to the node's close.
    const stallToCut: number[] = [];
    // 10 loopback addresses x 100 connections: the per-address and the total budget both bite.
    for (let a = 0; a < 10; a++) {
      for (let i = 0; i < 100; i++) {
        const s = net.connect({ port: node.port, host: '127.0.0.1', localAddress: `127.0.0.${a + 2}` });
        open++;
        let seen = '';
        let stalledAt = 0;
        s.on('connect', () => {
          s.write(head);
          s.write(body, (err) => !err && (stalledAt = Date.now()));
        });
        s.on('data', (b) => {
          seen += b.toString('latin1');
          if (seen.includes(' 503 ')) (answered503++, (seen = ''));
        });
        s.on('error', () => undefined);
        s.on('close', () => {
          open--;
          closedAt.push(Date.now() - start);
          if (stalledAt) stallToCut.push(Date.now() - stalledAt);
        });
      }
    }
    // While they stall, a real user is answered.
    const probes = await during(20_000, 2000, async () => (await node.get('/core/version')).status === 200);
    const deadline = Date.now() + 90_000;
    while (open > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    clearInterval(sampler);
    const lastClose = Math.max(...closedAt);
    const slowestCut = Math.max(...stallToCut);
    const median = stallToCut.sort((a, b) => a - b)[stallToCut.length >> 1];
    log('bodies', { startRss, peakRss, probes, answered503, lastCloseMs: lastClose, stalled: stallToCut.length, medianCutMs: median, slowestCutMs: slowestCut, open });
    assert.equal(open, 0, `${open} stalled connections still open after ${Date.now() - start} ms`);
    // Cut by the 10 s body idle timeout or the 3 s lingering close after a 503, not the 300 s request
    // timeout. The clock starts when the client handed its 2.2 MB to the kernel; reading 2.2 GB back out
    // takes a busy 2-core machine tens of seconds (measured 15-30 s for the slowest).
    assert.ok(stallToCut.length > 0 && slowestCut < 60_000, `slowest cut ${slowestCut} ms after the stall (${stallToCut.length} stalled)`);
    assert.ok(answered503 > 500, `bodies over the budget answered 503: ${answered503}`);
    // Bodies in flight are bounded at 64 MB (before: 1.45 GB held).
    assert.ok(peakRss < startRss + 300, `peak RSS ${peakRss} MB from ${startRss} MB`);
    assert.ok(probes.ok >= 5 && probes.failed <= 1, `probes ${JSON.stringify(probes)}`);
    assert.equal(node.exited(), false);
    const after = await node.post('/daemon/decoderawtransaction', { hexstring: 'zz' });
    assert.equal(after.status, 200, 'a body after the attack is read and answered');
  });

  it('413 for an oversized body reaches the client (lingering close), 20 of 20 times', async () => {
    const body = Buffer.alloc(5 << 20, 'a');
    const head = `POST /id/verifylogin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n`;
    const results = [];
    for (let i = 0; i < 20; i++) results.push(await rawExchange(node.port, head, body));
    const seen = results.filter((r) => /^HTTP\/1\.1 413 /.test(r.text)).length;
    log('413', { seen, errors: results.map((r) => r.error).filter(Boolean) });
    assert.equal(seen, 20, `413 seen ${seen} of 20; errors: ${results.map((r) => r.error).join(',')}`);
    assert.equal((await node.get('/core/version')).status, 200);
  });

  it('10,000-deep JSON in a body answers 400, not a stack overflow', async () => {
    const deep = '['.repeat(10_000) + ']'.repeat(10_000);
    const res = await node.post('/daemon/decoderawtransaction', deep);
    assert.equal(res.status, 200);
    assert.equal(res.json.data.code, 400, res.text);
    assert.equal(res.json.data.name, 'BadRequest');
    const obj = '{"a":'.repeat(1000) + '1' + '}'.repeat(1000); // 6 KB: under the route's 16 KB limit
    assert.equal((await node.post('/id/verifylogin', obj)).json.data.code, 400);
  });

  it('CORS: configured origins only; never null or an arbitrary origin with legacyidauth', async () => {
    const preflight = (origin: string) =>
      node.request('OPTIONS', '/id/loggedsessions', {
        headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'legacyidauth' },
      });
    for (const origin of [`http://127.0.0.1:${node.port - 1}`, 'https://home.runoncore.io']) {
      const res = await preflight(origin);
      assert.equal(res.headers.get('access-control-allow-origin'), origin, origin);
      assert.match(res.headers.get('access-control-allow-headers') ?? '', /legacyidauth/);
    }
    for (const origin of ['null', 'https://evil.example', `http://127.0.0.1:${node.port + 1}`, 'http://127.0.0.2:' + (node.port - 1)]) {
      const res = await preflight(origin);
      assert.equal(res.headers.get('access-control-allow-origin'), null, origin);
      assert.equal(res.headers.get('access-control-allow-headers'), null, origin);
      assert.equal(res.headers.get('access-control-allow-credentials'), null, origin);
      const get = await node.get('/id/loggedsessions', { origin, legacyidauth: auth });
      assert.equal(get.headers.get('access-control-allow-origin'), null, origin);
    }
  });

  it('HEAD changes no state: HEAD /id/logoutcurrentsession keeps the session, HEAD /id/loginphrase issues none', async () => {
    const phrases = async () => (await node.get('/id/activeloginphrases', { legacyidauth: auth })).json.data.length;
    const before = await phrases();
    for (let i = 0; i < 5; i++) {
      const res = await node.request('HEAD', '/id/loginphrase');
      assert.equal(res.status, 200);
      assert.equal(res.text, '');
    }
    assert.equal(await phrases(), before, 'HEAD /id/loginphrase issued a phrase');
    const head = await node.request('HEAD', '/id/logoutcurrentsession', { headers: { legacyidauth: auth } });
    assert.equal(head.status, 200);
    const still = await node.get('/id/loggedsessions', { legacyidauth: auth });
    assert.equal(still.json.status, 'success', `the session ended on HEAD: ${still.text}`);
    assert.equal((await node.request('HEAD', '/core/version?x=1')).status, 400, 'HEAD keeps the checks that need no handler');
  });

  it('/core/health: verdicts for anyone, endpoints and daemon details for the operator', async () => {
    const pub = await node.get('/core/health');
    for (const c of pub.json.data.checks) assert.deepEqual(Object.keys(c).sort(), ['name', 'ok', 'required'], JSON.stringify(c));
    assert.doesNotMatch(pub.text, /127\.0\.0\.1|16224|16124|unreachable/);
    const op = await node.get('/core/health', { legacyidauth: auth });
    assert.match(op.text, /unreachable at http:\/\/127\.0\.0\.1:16124\//);
  });
});
