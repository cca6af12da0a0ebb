/**
 * Global lifecycle commands on a peer's word: a listed peer (the test's own node-list key, membership
 * `nodelist` through the corenode RPC double) sends `appremove` of the victim's app naming the owner as the
 * caller: with no signature, a forged one, one over another command, a stale one and a replay of the
 * owner's real command. The victim's container still runs afterwards (Docker) and its data is still there.
 * Over HTTP, the owner's global command needs its signature (400 naming the field otherwise) and is taken once.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDocker, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { component, data, error, globalQuery, IDLE, last, ndjson, signedCommand, until, v8Spec } from '../apps/support.ts';
import { nodeSigner } from '../../lib/nodelist/signature.ts';
import { originText } from '../../plugins/peers/membership.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble } from '../node/doubles/corenode-rpc-double.ts';
import { freeTenantPort, registerAndPay, startTenantNode, tenantWallets, type TenantNode } from './node.ts';
import { joinPeer, type TestPeer } from './peer.ts';

const APP = 'victima';
const MAX_AGE_MS = 120_000;
const newSigner = () => nodeSigner(crypto.randomBytes(32).toString('hex'));

describe('tenants: global commands on a peer\'s word', function () {
  this.timeout(300_000);
  const w = tenantWallets();
  const nodeSecret = crypto.randomBytes(32).toString('hex');
  /** The test's own listed node key: its peer is as trusted as any node of the network. */
  const listed = newSigner();
  let docker: TestDocker;
  let ltc: Regtest;
  let rpc: CorenodeRpcDouble;
  let node: TenantNode;
  let attacker: TestPeer | undefined;
  const running = async () => (await docker.inspect(`coreweb_${APP}`)).State.Running as boolean;
  const victimFile = () => path.join(node.dataDir, 'apps', 'mounts', `coreweb_${APP}`, 'appdata', 'a.txt');

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    await ltc.mine(101);
    rpc = await startCorenodeRpcDouble(ltc);
    rpc.nodeList = [{ ip: '127.0.0.1', pubkey: nodeSigner(nodeSecret).pubKey }, { ip: '127.0.0.1', pubkey: listed.pubKey }] as any;
    const registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    node = await startTenantNode({
      docker,
      ltc,
      registryAddress,
      wallets: w,
      config: {
        daemon: { rpc: { url: rpc.url, user: ltc.user, password: ltc.password } },
        peers: { seeds: [], membership: 'nodelist', nodePrivateKey: nodeSecret, globalCommandMaxAgeMs: MAX_AGE_MS },
      },
    });
    const spec = v8Spec(w.a.legacyid, APP, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]);
    await registerAndPay(node, ltc, registryAddress, 'a', w, spec);
    assert.equal(last(ndjson(await node.get(`/apps/installapplocally/${APP}`, node.headers.admin))).status, 'success');
    await docker.cli(['exec', `coreweb_${APP}`, 'sh', '-c', 'echo data-of-a > /data/a.txt']);
    await until('A’s file on the host', async () => fs.existsSync(victimFile()));
  });
  after(async () => {
    attacker?.stop();
    await node?.stop();
    await rpc?.close();
    await ltc?.stop();
  });

  it('over HTTP a global command needs the caller\'s signature, fresh, of that very command, once', async () => {
    const stop = `/apps/appstop/${APP}/true`;
    const noSig = error(await node.get(stop, node.headers.a));
    assert.equal(noSig.code, 400);
    assert.match(noSig.message, /timestamp: a global command carries the time it was signed.*signature=<.*corenode global command/s);
    const forged = error(await node.get(stop + (await globalQuery(w.b, 'appstop', APP)), node.headers.a));
    assert.match(forged.message, /signature: not .* signature of this command/);
    const other = error(await node.get(stop + (await globalQuery(w.a, 'appremove', APP, true)), node.headers.a));
    assert.match(other.message, /signature: not .* signature of this command/);
    const stale = error(await node.get(stop + (await globalQuery(w.a, 'appstop', APP, undefined, Date.now() - MAX_AGE_MS - 60_000)), node.headers.a));
    assert.match(stale.message, /timestamp: signed \d+ s ago, older than the 120 s/);
    assert.ok(await running(), 'nothing refused stopped the app');
    // B is not the owner: the route's level refuses it before any signature is looked at.
    assert.equal(error(await node.get(stop + (await globalQuery(w.b, 'appstop', APP)), node.headers.b)).code, 401);

    const q = await globalQuery(w.a, 'appstop', APP);
    assert.match(data(await node.get(stop + q, node.headers.a)).message, /^Global appstop of victima sent to the 0 other node\(s\) that run it$/);
    await until('stopped by its owner', async () => !(await running()));
    const again = error(await node.get(stop + q, node.headers.a));
    assert.match(again.message, /signature: this signed command was already taken \(a replay\)/);
    data(await node.get(`/apps/appstart/${APP}`, node.headers.a));
    await until('started again (locally)', () => running());
  });

  it('a listed peer naming the owner with no, forged, altered, stale or replayed signatures removes nothing', async () => {
    attacker = await joinPeer(node.port, await freeTenantPort(), listed);
    const results: any[] = [];
    attacker.peer.on('appcommandresult', (m) => results.push(m.payload));
    const sender = { pubKey: listed.pubKey, ip: '127.0.0.1', sig: listed.sign(originText(attacker.keys.publicKey, '127.0.0.1')) };
    const send = (id: string, fields: Record<string, unknown>) =>
      attacker!.peer.broadcast('appcommand', { id, verb: 'appremove', app: APP, caller: w.a.legacyid, force: true, issuedAt: Date.now(), sender, ...fields });

    // The owner's real command, as the network carried it (the owner stops its app everywhere; the peer hears it).
    const real = await globalQuery(w.a, 'appstop', APP);
    data(await node.get(`/apps/appstop/${APP}/true${real}`, node.headers.a));
    const heard = await until('the owner’s command heard by the peer', async () => attacker!.received.find((m) => m.type === 'appcommand')?.payload as any);
    await until('stopped by its owner', async () => !(await running()));
    data(await node.get(`/apps/appstart/${APP}`, node.headers.a));
    await until('started again (locally)', () => running());

    const now = Date.now();
    send('no-signature', {});
    send('forged-by-b', await signedCommand(w.b, 'appremove', APP, true, now));
    send('garbage', { timestamp: now, signature: 'H' + 'A'.repeat(87) });
    send('altered-verb', { timestamp: heard.timestamp, signature: heard.signature });
    send('stale', await signedCommand(w.a, 'appremove', APP, true, now - MAX_AGE_MS - 60_000));
    send('replayed', { ...heard, force: heard.force, id: 'replayed', sender, issuedAt: Date.now() });
    // B names itself: a valid signature, but not the owner's app on this node's records.
    send('b-as-caller', { caller: w.b.legacyid, ...(await signedCommand(w.b, 'appremove', APP, true, now)) });

    const expected: Record<string, RegExp> = {
      'no-signature': /timestamp: a global command carries the time it was signed/,
      'forged-by-b': /signature: not .* signature of this command/,
      garbage: /signature: not .* signature of this command/,
      'altered-verb': /signature: not .* signature of this command/,
      stale: /timestamp: signed \d+ s ago/,
      replayed: /already taken \(a replay\)/,
      'b-as-caller': /may not appremove victima/,
    };
    const of = (id: string) => results.find((r) => r.id === id);
    await until('an outcome for every attack', async () => Object.keys(expected).every(of));
    for (const [id, re] of Object.entries(expected)) {
      assert.equal(of(id).ok, false, `${id}: ${JSON.stringify(of(id))}`);
      assert.match(of(id).message, re, id);
    }
    // What Docker and the victim see: the container runs, its data is where it was, the app is installed.
    assert.ok(await running());
    assert.equal(fs.readFileSync(victimFile(), 'utf8').trim(), 'data-of-a');
    assert.equal(data(await node.get(`/apps/installedapps/${APP}`)).length, 1);
  });
});
