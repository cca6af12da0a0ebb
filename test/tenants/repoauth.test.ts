/**
 * Registry credentials (`repoauth`) in a specification: a specification is public (gossiped to every node,
 * served by appspecifications), so a password in it is public too. The node refuses one at verification,
 * registration, update and price; takes, keeps and relays none from a peer; and purges at start what an
 * older node stored (its peer store and its apps stores). What is asserted is what the data folder holds and
 * what the node's listed peers receive, not only the answers.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDocker, type TestDocker } from '../support/docker.ts';
import { component, data, error, IDLE, signedMessage, until, v8Spec } from '../apps/support.ts';
import { generateKeys } from '../../plugins/peers/protocol/keys.ts';
import { messageHash } from '../../plugins/peers/protocol/frames.ts';
import { freeTenantPort, startTenantNode, tenantWallets, type TenantNode } from './node.ts';
import { joinPeer, type TestPeer } from './peer.ts';

/** Every file under `dir` whose bytes contain `needle` (the node's stores, logs, keys...). */
function filesHolding(dir: string, needle: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const f = path.join(e.parentPath, e.name);
    if (fs.readFileSync(f).includes(needle)) out.push(path.relative(dir, f));
  }
  return out;
}

/** Non-empty repoauth values in the apps plugin's store files. */
function storedRepoauth(dataDir: string): string[] {
  const dir = path.join(dataDir, 'apps');
  const found: string[] = [];
  for (const f of fs.readdirSync(dir).filter((x) => x.endsWith('.db')))
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean)) {
      const d = JSON.parse(line);
      for (const c of d.appSpecification?.compose ?? []) if (c?.repoauth) found.push(`${f}: ${d.appSpecification.name}: ${c.repoauth.slice(0, 20)}`);
    }
  return found;
}

const OPEN = { peers: { seeds: [], membership: 'open' } };

describe('tenants: registry credentials in a specification (repoauth)', function () {
  this.timeout(240_000);
  const w = tenantWallets();
  const password = `pw-${crypto.randomBytes(8).toString('hex')}`;
  const repoauth = `owner:${password}`;
  let docker: TestDocker;
  let node: TenantNode | undefined;
  const peers: TestPeer[] = [];
  const privSpec = (name: string, auth: string) => v8Spec(w.a.legacyid, name, [component('box', docker.images.busybox, 29990, 8080, { commands: IDLE, repoauth: auth })]);

  before(async () => {
    docker = await ensureDocker();
  });
  afterEach(async () => {
    for (const p of peers.splice(0)) p.stop();
    await node?.stop();
    node = undefined;
  });

  it('is refused at verification, registration, update and price, naming the field and why; no peer and no file gets the password', async () => {
    node = await startTenantNode({ docker, wallets: w, config: OPEN });
    const [sender, listener] = [await joinPeer(node.port, await freeTenantPort()), await joinPeer(node.port, await freeTenantPort())];
    peers.push(sender, listener);
    const spec = privSpec('privatea', repoauth);
    const refusals = [
      await node.post('/apps/verifyappregistrationspecifications', spec),
      await node.post('/apps/verifyappupdatespecifications', spec),
      await node.post('/apps/appregister', await signedMessage(w.a, spec), node.headers.a),
      await node.post('/apps/appupdate', await signedMessage(w.a, spec, 'coreappupdate'), node.headers.a),
      await node.post('/apps/calculateprice', spec),
    ];
    for (const r of refusals) {
      const e = error(r);
      assert.equal(e.code, 400, r.text);
      assert.match(e.message, /^Invalid specification: compose\[0\]\.repoauth: .*a specification is public/, r.text);
      assert.ok(!r.text.includes(password), 'the answer does not echo the password');
    }
    assert.ok(!(await node.get('/apps/temporarymessages')).text.includes('privatea'));

    // A peer gossips the same registration (validly signed by A): not taken, not kept, not relayed.
    sender.peer.broadcast('appmessage', { message: await signedMessage(w.a, privSpec('privateb', repoauth)), kind: 'register' });
    sender.peer.broadcast('broadcastmessage', 'marker-after-the-secret');
    await until('the marker relayed to the other peer', async () => listener.text().includes('marker-after-the-secret'));
    await until('the marker kept on disk', async () => fs.readFileSync(path.join(node!.dataDir, 'peers', 'messages.db'), 'utf8').includes('marker-after-the-secret'));
    assert.ok(!listener.text().includes(password), 'the listening peer never received the password');
    assert.ok(!(await node.get('/apps/temporarymessages')).text.includes('privateb'));

    // The operator's broadcast carrying it is refused with the reason; a registration without it travels.
    const b = error(await node.post('/core/broadcastmessage', { compose: [{ repoauth }] }, node.headers.admin));
    assert.equal(b.code, 400);
    assert.match(b.message, /repoauth: .*public/);
    const clean = v8Spec(w.a.legacyid, 'publica', [component('box', docker.images.busybox, 29991, 8080, { commands: IDLE, repoauth: '' })]);
    data(await node.post('/apps/appregister', await signedMessage(w.a, clean), node.headers.a));
    await until('the clean registration gossiped', async () => listener.received.some((m) => m.type === 'appmessage' && JSON.stringify(m.payload).includes('publica')));

    assert.deepEqual(filesHolding(node.dataDir, password), []);
    assert.ok(!listener.text().includes(password) && !sender.text().includes(password));
  });

  it('what an older node stored is purged at start: no store keeps it, no joining peer is sent it, the records stay', async () => {
    const now = Date.now();
    const origin = generateKeys();
    const kept = (type: string, payload: unknown, sentAt: number) => {
      const m = JSON.stringify({ type, payload, origin: origin.publicKey, sentAt, nonce: crypto.randomBytes(12).toString('base64') });
      return { hash: messageHash(m), m, s: origin.sign(m), sentAt, type, _id: crypto.randomBytes(8).toString('hex') };
    };
    const line = (d: object) => JSON.stringify({ _id: crypto.randomBytes(8).toString('hex'), ...d });
    const oldSpec = privSpec('olda', repoauth);
    const sealedSpec = privSpec('oldb', 'sealed:v1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    const perm = (spec: Record<string, any>, hash: string) => ({ type: 'coreappregister', version: 1, appSpecification: spec, timestamp: now - 60_000, signature: 'x', hash, signer: w.a.legacyid, txid: hash, height: 10, valueSat: '100000000' });
    const global = (spec: Record<string, any>, hash: string) => ({ name: spec.name, owner: w.a.legacyid, originalOwner: w.a.legacyid, hash, height: 10, hashes: [hash], appSpecification: spec, expireHeight: 22010 });
    const seed = (dataDir: string) => {
      fs.mkdirSync(path.join(dataDir, 'peers'));
      fs.mkdirSync(path.join(dataDir, 'apps'));
      fs.writeFileSync(
        path.join(dataDir, 'peers', 'messages.db'),
        [kept('appmessage', { message: { type: 'coreappregister', version: 1, appSpecification: oldSpec, timestamp: now - 60_000, signature: 'x' }, kind: 'register' }, now - 60_000), kept('broadcastmessage', 'kept-marker', now - 50_000)]
          .map((k) => JSON.stringify(k))
          .join('\n') + '\n',
      );
      fs.writeFileSync(path.join(dataDir, 'apps', 'temporary.db'), line({ ...perm(oldSpec, 'aa'.repeat(32)), receivedAt: now, expireAt: now + 3600_000 }) + '\n');
      fs.writeFileSync(path.join(dataDir, 'apps', 'permanent.db'), [line(perm(oldSpec, 'aa'.repeat(32))), line(perm(sealedSpec, 'bb'.repeat(32)))].join('\n') + '\n');
      fs.writeFileSync(path.join(dataDir, 'apps', 'specs.db'), [line(global(oldSpec, 'aa'.repeat(32))), line(global(sealedSpec, 'bb'.repeat(32)))].join('\n') + '\n');
    };
    node = await startTenantNode({ docker, wallets: w, config: OPEN, seed });

    assert.deepEqual(filesHolding(node.dataDir, password), []);
    assert.deepEqual(storedRepoauth(node.dataDir), []);
    // The records themselves are kept, without the credentials.
    for (const name of ['olda', 'oldb']) assert.equal(data(await node.get(`/apps/appspecifications/${name}`)).compose[0].repoauth, undefined, name);
    assert.equal(data(await node.get('/apps/permanentmessages')).length, 2);
    // A peer that joins catches up on what the node kept (the marker), never on the password.
    const late = await joinPeer(node.port, await freeTenantPort());
    peers.push(late);
    await until('the kept marker in the catch-up', async () => late.text().includes('kept-marker'));
    assert.ok(!late.text().includes(password));
  });
});
