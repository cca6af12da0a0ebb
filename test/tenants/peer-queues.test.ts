/**
 * Peers that do not read. A listed peer (its node key in the node list the daemon answers, at 127.0.0.1)
 * joins the node process over `/ws/core`, has the node keep some of its broadcasts, then stops reading and
 * asks for catch-ups (`sync`) at 150 a second, under the node's rate limit. What the node's RSS does,
 * whether its API answers meanwhile, and what the node says of the peer afterwards are asserted.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { nodeSigner } from '../../lib/nodelist/signature.ts';
import { proofText } from '../../plugins/peers/membership.ts';
import { ensureDocker, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble } from '../node/doubles/corenode-rpc-double.ts';
import { Rogue } from '../peers/rogue.ts';
import { until } from '../apps/support.ts';
import { said, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

const SYNCS = 2_580;
const PER_SECOND = 150;
const FILL = 40; // broadcasts of 8 KB the node keeps: each catch-up answer is ~400 KB of frames
/** The flood stops here whatever happens: the unbounded node would take the machine's memory. */
const ABORT_RISE_MB = 300;

describe('tenants: a listed peer that asks for catch-ups and does not read', function () {
  this.timeout(300_000);
  const w = tenantWallets();
  const listed = nodeSigner(crypto.randomBytes(32).toString('hex'));
  const proof = (peerKey: string, nonce: string) => ({ pubKey: listed.pubKey, sig: listed.sign(proofText(peerKey, nonce)) });
  let docker: TestDocker;
  let ltc: Regtest;
  let rpc: CorenodeRpcDouble;
  let node: TenantNode;
  let url: string;

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    rpc = await startCorenodeRpcDouble(ltc);
    rpc.nodeList = [{ ip: '127.0.0.1', pubkey: listed.pubKey } as { ip: string }];
    node = await startTenantNode({
      docker,
      ltc,
      wallets: w,
      config: { daemon: { rpc: { url: rpc.url, user: ltc.user, password: ltc.password } }, peers: { seeds: [], membership: 'nodelist', nodeListCacheMs: 500 } },
    });
    url = `ws://127.0.0.1:${node.port}/ws/core`;
  });
  after(async () => {
    await node?.stop();
    await rpc?.close();
    await ltc?.stop();
  });

  it('the peer is cut and counted as one sending bad frames; RSS stays bounded; the API answers throughout', async () => {
    const r = new Rogue(url, 29990, proof);
    await r.join();
    for (let i = 0; i < FILL; i++) {
      const m = JSON.stringify({ type: 'rogue.fill', payload: 'f'.repeat(8000), origin: r.keys.publicKey, sentAt: Date.now(), nonce: `n${i}` });
      r.send('gossip', { m, s: r.keys.sign(m), h: 0 });
    }
    // The node keeps them: a catch-up read normally brings all of them back.
    r.send('sync', { since: 0 });
    await until('the catch-up answer', async () => r.received.filter((f) => f.t === 'syncbatch').reduce((n, f) => n + JSON.parse(f.d).items.length, 0) >= FILL);

    const before = node.rssMb();
    let peak = before;
    const latencies: number[] = [];
    const failures: string[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const t0 = performance.now();
        const a = await node.get('/core/version').catch((e) => ({ status: 0, text: String(e) }) as any);
        latencies.push(performance.now() - t0);
        if (a.status !== 200) failures.push(said(a));
        peak = Math.max(peak, node.rssMb());
        await new Promise((res) => setTimeout(res, 50));
      }
    })();
    const cuts = async () => (await node.get('/core/networkhealth')).json?.data?.messages?.sendQueueCuts ?? 0;

    (r.ws as any).pause(); // from here the peer reads nothing
    let sent = 0;
    const t0 = Date.now();
    try {
      while (sent < SYNCS && !r.closed && node.rssMb() - before < ABORT_RISE_MB) {
        const due = Math.min(SYNCS, Math.floor(((Date.now() - t0) / 1000) * PER_SECOND) + 1);
        for (; sent < due; sent++) r.send('sync', { since: 0 });
        peak = Math.max(peak, node.rssMb());
        if (sent % 150 < 15 && (await cuts()) > 0) break;
        await new Promise((res) => setTimeout(res, 100));
      }
      await until('the peer cut', async () => (await cuts()) > 0 || node.rssMb() - before >= ABORT_RISE_MB).catch(() => {});
    } finally {
      probing = false;
      await probe;
      r.close();
    }
    const rise = peak - before;
    const sorted = [...latencies].sort((a, b) => a - b);
    console.log(
      `      ${sent} syncs sent in ${((Date.now() - t0) / 1000).toFixed(1)} s; node RSS ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB (+${rise.toFixed(1)}); ` +
        `/core/version ${latencies.length} calls, median ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms`,
    );
    assert.ok(rise < 100, `RSS rose ${rise.toFixed(1)} MB (${before.toFixed(0)} -> ${peak.toFixed(0)} MB) after ${sent} syncs`);
    assert.deepEqual(failures, []);
    assert.ok(latencies.length > 0);

    // Cut and counted as a peer sending bad frames: listed unstable, its IP refused, the link gone.
    const health = (await node.get('/core/networkhealth')).json.data;
    assert.equal(health.messages.sendQueueCuts, 1, JSON.stringify(health.messages));
    assert.ok(health.messages.badFrames >= 1);
    const unstable = (await node.get('/core/unstablenodes')).json.data as any[];
    assert.ok(unstable.some((u) => u.ip === '127.0.0.1' && u.port === '29990' && /send queue over 4194304 bytes/.test(u.reason)), JSON.stringify(unstable));
    assert.deepEqual((await node.get('/core/peers/127.0.0.1:29990')).json.data, []);
    await assert.rejects(new Rogue(url, 29991, proof).join(), /closed during the handshake: 4003/);
    assert.ok(!node.exited());
  });
});
