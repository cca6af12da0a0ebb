/**
 * What goes wrong: a failed pull and a failed start leave nothing behind and name the step; the policy
 * gate (503 until a signed policy is held; unsigned, foreign and older policies refused; the last good
 * copy kept across a restart); test installs by level; one install at a time; specification errors that
 * name the field. No chain needed: test installs use temporary messages.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDocker, ensurePrivateRegistry, mountsUnder, unmountUnder, type TestDocker } from '../support/docker.ts';
import { component, data, error, freeAppPort, last, makeWallets, ndjson, signedMessage, startAppsNode, tmp, until, v3Spec, v8Spec, writePolicy, type AppsNode } from './support.ts';
import { IDLE } from './support.ts';

describe('apps: failures, the policy gate, test installs', function () {
  this.timeout(180_000);
  let docker: TestDocker;
  let node: AppsNode;
  const dataDir = tmp('failures');
  const w = makeWallets();

  before(async () => {
    docker = await ensureDocker();
    node = await startAppsNode({ docker, wallets: w, dataDir, policy: false });
  });
  after(async () => {
    await node?.close();
    await unmountUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const hasImage = async (image: string) => (await docker.cli(['images', '-q', image])).trim() !== '';

  /** Nothing of `app` on Docker or on disk; `image` is there only if it was before the install. */
  async function nothingLeft(app: string, image?: string, hadImage = false) {
    assert.equal((await docker.cli(['ps', '-aq', '--filter', `label=corenode.app=${app}`])).trim(), '');
    assert.equal((await docker.cli(['network', 'ls', '-q', '--filter', `name=coreDockerNetwork_${app}`])).trim(), '');
    assert.deepEqual(mountsUnder(dataDir), []);
    const vols = path.join(dataDir, 'apps', 'volumes');
    assert.deepEqual(fs.existsSync(vols) ? fs.readdirSync(vols) : [], []);
    if (image) assert.equal(await hasImage(image), hadImage, `image ${image} ${hadImage ? 'kept (it was there before)' : 'removed'}`);
    assert.deepEqual(data(await node.get(`/apps/installedapps/${app}`)), []);
  }

  const register = async (spec: Record<string, unknown>) => data(await node.post('/apps/appregister', await signedMessage(w.owner, spec), node.headers.owner));

  it('image-pulling routes answer 503 until a signed policy is held; unsigned and foreign policies are refused', async () => {
    for (const p of ['/apps/installapplocally/x', '/apps/testappinstall/x', '/apps/redeploy/x', '/apps/redeploycomponent/x/y']) assert.equal((await node.get(p, node.headers.coreTeam)).status, 503, p);
    assert.equal(data(await node.get('/apps/networkpolicy')).held, false);
    // Signed by an id outside the core team.
    await writePolicy(node.policyFile, w.other);
    await until('foreign signer refused', async () => /not a core-team id/.test(data(await node.get('/apps/networkpolicy')).sources[0]?.outcome));
    // Signature does not match the message.
    const good = JSON.parse((await writePolicy(node.policyFile, w.coreTeam), fs.readFileSync(node.policyFile, 'utf8')));
    fs.writeFileSync(node.policyFile, JSON.stringify({ ...good, message: good.message.replace('"blockedPorts":[]', '"blockedPorts":[1]') }));
    await until('tampered refused', async () => /signature does not match/.test(data(await node.get('/apps/networkpolicy')).sources[0]?.outcome));
    assert.equal((await node.get('/apps/installapplocally/x', node.headers.coreTeam)).status, 503);

    await writePolicy(node.policyFile, w.coreTeam, { issuedAt: Date.now(), blockedRepositories: ['blockedowner'], enterpriseOwners: { nodekey: [w.admin.legacyid] } });
    await until('policy held', async () => data(await node.get('/apps/networkpolicy')).held);
    assert.equal(error(await node.get('/apps/installapplocally/x', node.headers.coreTeam)).code, 404);
    assert.deepEqual(data(await node.get('/apps/whitelistedrepositories')), ['corenode-test/node']);
    assert.deepEqual(data(await node.get('/core/enterpriseappowners')), { nodekey: [w.admin.legacyid] });
    // An older policy is never taken.
    await writePolicy(node.policyFile, w.coreTeam, { issuedAt: Date.now() - 3600_000, blockedRepositories: [] });
    await until('older refused', async () => /older/.test(data(await node.get('/apps/networkpolicy')).sources[0]?.outcome));
    assert.deepEqual(data(await node.get('/apps/networkpolicy')).policy.blockedRepositories, ['blockedowner']);
  });

  it('a blocked repository is refused at the check step', async () => {
    const spec = v3Spec(w.owner.legacyid, 'blockedimg', `${docker.registry}/blockedowner/img:1`, await freeAppPort());
    await register(spec);
    const lines = ndjson(await node.get('/apps/testappinstall/blockedimg', node.headers.coreTeam));
    assert.equal(last(lines).step, 'check');
    assert.match(last(lines).message, /blocked by the network policy/);
    await nothingLeft('blockedimg');
  });

  it('a failed pull leaves nothing behind and names the step', async () => {
    const spec = v8Spec(w.owner.legacyid, 'badpull', [
      component('good', docker.images.busybox, await freeAppPort(), 8080, { commands: IDLE }),
      component('bad', `${docker.registry}/corenode-test/nosuchimage:9`, await freeAppPort(), 8080),
    ]);
    await register(spec);
    const had = await hasImage(docker.images.busybox);
    const lines = ndjson(await node.get('/apps/testappinstall/badpull', node.headers.owner));
    const end = last(lines);
    assert.equal(end.status, 'error');
    assert.equal(end.step, 'pull');
    assert.equal(end.component, 'bad');
    assert.match(end.message, /failed at step 'pull'.*everything it created was removed/);
    await nothingLeft('badpull', docker.images.busybox, had);
  });

  it('a failed start leaves nothing behind and names the step', async () => {
    const spec = v3Spec(w.owner.legacyid, 'badstart', docker.images.node, await freeAppPort(), { commands: ['/nonexistent'] });
    await register(spec);
    const had = await hasImage(docker.images.node);
    const lines = ndjson(await node.get('/apps/testappinstall/badstart', node.headers.coreTeam));
    assert.equal(last(lines).step, 'start', JSON.stringify(last(lines)));
    assert.ok(lines.some((l) => l.step === 'cleanup' && /container corebadstart/.test(l.status)));
    await nothingLeft('badstart', docker.images.node, had);
  });

  it('testappinstall: the temporary message owner and the core team pass (installed, then removed); others are refused; one at a time per owner and per app', async () => {
    const port = await freeAppPort();
    await register(v3Spec(w.owner.legacyid, 'trial', docker.images.node, port));
    assert.equal(error(await node.get('/apps/testappinstall/trial', node.headers.other)).code, 401);
    assert.equal(error(await node.get('/apps/testappinstall/trial')).code, 401);
    // The owner's first test install is its one turn as soon as its answer starts (test installs do not
    // take the install slot); another caller's test install of the same app meanwhile stops at its check.
    const first = await fetch(`${node.url}/apps/testappinstall/trial`, { headers: node.headers.owner });
    const busy = error(await node.get('/apps/testappinstall/trial', node.headers.owner));
    assert.equal(busy.name, 'Busy');
    assert.match(busy.message, /one test installation at a time per owner/);
    const beside = last(ndjson(await node.get('/apps/testappinstall/trial', node.headers.coreTeam)));
    assert.equal(beside.step, 'check', JSON.stringify(beside));
    assert.match(beside.message, /trial is being installed on this node/);
    const lines = (await first.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    assert.ok(lines.some((l) => l.step === 'start'));
    await nothingLeft('trial');
    const again = ndjson(await node.get('/apps/testappinstall/trial', node.headers.coreTeam));
    assert.equal(last(again).status, 'success', JSON.stringify(again));
  });

  it('registry credentials in a spec are refused (a spec is public); an image of a registry that wants them fails its pull', async () => {
    const priv = await ensurePrivateRegistry();
    const port = await freeAppPort();
    const withAuth = v8Spec(w.owner.legacyid, 'privateok', [component('box', priv.image, port, 8080, { commands: IDLE, repoauth: priv.repoauth })]);
    const refused = error(await node.post('/apps/appregister', await signedMessage(w.owner, withAuth), node.headers.owner));
    assert.equal(refused.code, 400);
    assert.match(refused.message, /^Invalid specification: compose\[0\]\.repoauth: .*a specification is public/);
    assert.equal(error(await node.get('/apps/testappinstall/privateok', node.headers.coreTeam)).code, 404);
    const noAuth = v8Spec(w.owner.legacyid, 'privatenone', [component('box', priv.image, port, 8080, { commands: IDLE })]);
    await register(noAuth);
    const bad = ndjson(await node.get('/apps/testappinstall/privatenone', node.headers.coreTeam));
    assert.equal(last(bad).step, 'pull', JSON.stringify(last(bad)));
    await nothingLeft('privatenone');
  });

  it('a valid specification of every version 1 to 8 verifies and has a price', async () => {
    const owner = w.owner.legacyid;
    const img = docker.images.node;
    const { ports: _p, containerPorts: _c, domains: _d, instances: _i, ...v3rest } = v3Spec(owner, 'vone', img, 31000);
    const v1 = { ...v3rest, version: 1, port: 31000, containerPort: 8080 };
    const { instances: _i2, ...v2 } = { ...v3Spec(owner, 'vtwo', img, 31000), version: 2 };
    const comp = [component('a', img, 31001, 8080)];
    const v4 = { version: 4, name: 'vfour', description: 'd', owner, compose: comp, instances: 3 };
    const v5 = { ...v4, version: 5, name: 'vfive', contacts: ['a@b.c'], geolocation: ['acEU', 'acNA_US'] };
    const v6 = { ...v5, version: 6, name: 'vsix', expire: 22000 };
    // v7's repoauth: empty (no credentials) is a valid spec; credentials are refused (test above).
    const v7 = { ...v6, version: 7, name: 'vseven', nodes: [], staticip: false, compose: [component('a', img, 31001, 8080, { repoauth: '' })] };
    const v8 = v8Spec(owner, 'v-eight', comp);
    for (const spec of [v1, v2, v3Spec(owner, 'vthree', img, 31000), v4, v5, v6, v7, v8]) {
      const a = await node.post('/apps/verifyappregistrationspecifications', spec);
      assert.equal(a.json?.status, 'success', `v${spec.version}: ${a.text}`);
      assert.ok(data(await node.post('/apps/calculateprice', spec)) > 0);
    }
    // Fields of another version are refused by name.
    const e = error(await node.post('/apps/verifyappregistrationspecifications', { ...v4, version: 3 }));
    assert.match(e.message, /compose: is not a known key|repotag: is required/);
  });

  it('specification errors name the field', async () => {
    const owner = w.owner.legacyid;
    const img = docker.images.node;
    const cases: [Record<string, unknown>, RegExp][] = [
      [v3Spec(owner, 'coreapp', img, 31000), /name: must not start with 'core'/],
      [v3Spec(owner, 'bad_name', img, 31000), /name: must match pattern/],
      [v3Spec(owner, 'ports', img, 16127), /ports\[0\]: port 16127 is banned/],
      [v3Spec(owner, 'ports', img, 80), /ports\[0\]: port 80 is for enterprise owners only/],
      [v3Spec(owner, 'ports', img, 31000, { containerPorts: [1, 2] }), /containerPorts: must have one entry per port/],
      [v3Spec(owner, 'cpu', img, 31000, { cpu: 0.55 }), /cpu: must be a multiple of 0.1/],
      [v3Spec(owner, 'cpu', img, 31000, { ram: 99 }), /ram: must be >= 100/],
      [v3Spec(owner, 'data', img, 31000, { containerData: 'data' }), /containerData: the first entry 'data'/],
      [v3Spec(owner, 'data', img, 31000, { containerData: '/data|x:/y' }), /containerData: 'x:\/y' is not one of/],
      [v3Spec(owner, 'data', img, 31000, { containerData: '/a/../b' }), /containerData: '\/a\/..\/b' must not contain/],
      [v3Spec(owner, 'inst', img, 31000, { instances: 2 }), /instances: must be >= 3/],
      [v3Spec(owner, 'extra', img, 31000, { surprise: 1 }), /surprise: is not a known key/],
      [v3Spec('notanaddress0000000000000000', 'own', img, 31000), /owner: must be a P2PKH address/],
      [v8Spec(owner, 'dup', [component('a', img, 31001, 1), component('a', img, 31002, 1)]), /compose\[1\].name: component name 'a' is used twice/],
      [v8Spec(owner, 'refs', [component('a', img, 31001, 1, { containerData: '/d|1:/e' })]), /compose\[0\].containerData: component 1 must name an earlier component/],
      [v8Spec(owner, 'sameport', [component('a', img, 31001, 1), component('b', img, 31001, 1)]), /compose\[1\].ports\[0\]: port 31001 is already used/],
      [v8Spec(owner, 'dc', [component('a', img, 31001, 1)]), /./],
      [{ version: 9, name: 'x' }, /version: must be <= 8/],
    ];
    (cases[16][0] as any).datacenter = true;
    cases[16][1] = /datacenter: is for enterprise owners only/;
    for (const [spec, re] of cases) {
      const e = error(await node.post('/apps/verifyappregistrationspecifications', spec));
      assert.equal(e.code, 400, JSON.stringify(e));
      assert.match(e.message, re, `${JSON.stringify(spec).slice(0, 80)}: ${e.message}`);
    }
    // The policy's enterprise owner may use enterprise ports and datacenter.
    const ent = v8Spec(w.admin.legacyid, 'enterprise', [component('a', img, 80, 1)]);
    (ent as any).datacenter = true;
    assert.equal(data(await node.post('/apps/verifyappregistrationspecifications', ent)).name, 'enterprise');
    const price = data(await node.post('/apps/calculatefiatandcoreprice', v3Spec(owner, 'priced', img, 31000)));
    assert.match(price.usd.toFixed(2), /\.(49|99)$/);
    // Synced (g:) apps pay the full price.
    assert.deepEqual(data(await node.post('/apps/calculatefiatandcoreprice', v3Spec(owner, 'priced', img, 31000, { containerData: 'g:/data' }))), price);
  });

  it('a policy from an http source is taken', async () => {
    const { createServer } = await import('node:http');
    const file = path.join(dataDir, 'served-policy.json');
    await writePolicy(file, w.coreTeam, { issuedAt: Date.now() + 1000, vettedRepositories: ['served/over-http'] });
    const srv = createServer((_req, res) => res.end(fs.readFileSync(file)));
    const port = await freeAppPort();
    await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
    const other = await startAppsNode({ docker, wallets: w, policy: false, apps: { policy: { sources: [`http://127.0.0.1:${port}/policy.json`], refreshSeconds: 0.2 } } });
    try {
      await until('served policy held', async () => data(await other.get('/apps/networkpolicy')).held);
      assert.deepEqual(data(await other.get('/apps/whitelistedrepositories')), ['served/over-http']);
    } finally {
      await other.close();
      srv.close();
    }
  });

  it('the last good policy is kept across a restart when no source answers', async () => {
    await node.close({ keepData: true });
    fs.rmSync(node.policyFile);
    node = await startAppsNode({ docker, wallets: w, dataDir, policy: false });
    const p = data(await node.get('/apps/networkpolicy'));
    assert.equal(p.held, true);
    assert.match(p.sources[0].outcome, /refused/);
    assert.equal(error(await node.get('/apps/installapplocally/x', node.headers.coreTeam)).code, 404);
  });
});
