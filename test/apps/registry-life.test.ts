/**
 * What the registry does to apps after their registration, on real parts (regtest litecoind, the explorer,
 * the test Docker and its private registry): payments count only from `minConfirmations`; a `repoauth` is
 * refused (a specification is public) and an image of a registry that wants credentials fails its pull,
 * while nothing the node keeps or answers holds the password; a paid update redeploys the installed app (soft keeps its data, a changed `hdd` reinstalls
 * it); an app whose `expire` ran out stops being global and is removed from the node.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDocker, ensurePrivateRegistry, type PrivateRegistry, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { component, data, error, freeAppPort, last, makeWallets, ndjson, pay, probe, signedMessage, startAppsNode, until, v8Spec, type AppsNode } from './support.ts';
import { IDLE } from './support.ts';

describe('apps: confirmations, refused repoauth, updates, expiry', function () {
  this.timeout(240_000);
  let docker: TestDocker;
  let priv: PrivateRegistry;
  let ltc: Regtest;
  let node: AppsNode;
  let registryAddress: string;
  const w = makeWallets();
  let webPort: number;
  let webSpec: Record<string, any>;
  const password = () => priv.repoauth.split(':')[1];

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    priv = await ensurePrivateRegistry();
    await ltc.mine(101);
    registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    node = await startAppsNode({ docker, ltc, wallets: w, registryAddress, apps: { minConfirmations: 2 } });
  });
  after(async () => {
    if (node) {
      for (const app of ['privapp', 'webapp', 'expapp']) await node.get(`/apps/appremove/${app}/true`, node.headers.coreTeam).catch(() => {});
      await node.close();
    }
    await ltc?.stop();
  });

  const global = async (name: string) => {
    const a = await node.get(`/apps/appspecifications/${name}`);
    return a.json?.status === 'success' ? a.json.data : undefined;
  };
  async function submit(spec: Record<string, any>, type = 'coreappregister') {
    const hash = data(await node.post(type === 'coreappregister' ? '/apps/appregister' : '/apps/appupdate', await signedMessage(w.owner, spec, type), node.headers.owner));
    await pay(ltc, registryAddress, data(await node.post('/apps/calculateprice', spec)), hash);
    return hash;
  }
  const installed = async (name: string) => data(await node.get(`/apps/installedapps/${name}`))[0];

  it('a payment makes its message permanent only at minConfirmations (2)', async () => {
    const privSpec = v8Spec(w.owner.legacyid, 'privapp', [component('box', priv.image, await freeAppPort(), 8080, { commands: IDLE })]);
    webPort = await freeAppPort();
    webSpec = v8Spec(w.owner.legacyid, 'webapp', [component('web', docker.images.node, webPort, 8080)]);
    const privHash = await submit(privSpec);
    await ltc.mine(1);
    const webHash = await submit(webSpec);
    await ltc.mine(1);
    // privapp's payment has 2 confirmations now and webapp's 1: the round that confirms privapp judged both.
    assert.equal((await until('privapp global', () => global('privapp'))).hash, privHash);
    assert.equal(error(await node.get('/apps/appspecifications/webapp')).code, 404);
    assert.ok(!data(await node.get('/apps/hashes')).some((h: any) => h.hash === webHash));
    await ltc.mine(1);
    assert.equal((await until('webapp global', () => global('webapp'))).hash, webHash);
  });

  it('repoauth: refused at registration and update naming the field; the private image fails its pull without it; no file or answer holds the password', async () => {
    const secret = password();
    const withAuth = (name: string) => v8Spec(w.owner.legacyid, name, [component('box', priv.image, 29100, 8080, { commands: IDLE, repoauth: priv.repoauth })]);
    for (const [route, type] of [['/apps/appregister', 'coreappregister'], ['/apps/appupdate', 'coreappupdate']]) {
      const e = error(await node.post(route, await signedMessage(w.owner, withAuth(type === 'coreappregister' ? 'privnew' : 'privapp'), type), node.headers.owner));
      assert.equal(e.code, 400, route);
      assert.match(e.message, /^Invalid specification: compose\[0\]\.repoauth: .*a specification is public/, route);
    }
    const lines = ndjson(await node.get('/apps/installapplocally/privapp', node.headers.coreTeam));
    assert.equal(last(lines).step, 'pull', JSON.stringify(last(lines)));
    for (const route of ['/apps/permanentmessages', '/apps/globalappsspecifications', '/apps/availableapps', '/apps/temporarymessages', '/apps/appspecifications/privapp', '/apps/installedapps'])
      assert.ok(!(await node.get(route)).text.includes(secret), route);
    // Nothing the node keeps holds the password (nedb files, the key aside).
    const files = fs.readdirSync(path.join(node.dataDir, 'apps')).filter((f) => f.endsWith('.db'));
    assert.ok(files.length >= 4, files.join());
    for (const f of files) assert.ok(!fs.readFileSync(path.join(node.dataDir, 'apps', f), 'utf8').includes(secret), f);
  });

  it('a paid update redeploys the installed app: soft keeps its data, a changed hdd reinstalls it', async () => {
    assert.equal(last(ndjson(await node.get('/apps/installapplocally/webapp', node.headers.coreTeam))).status, 'success');
    await until('webapp answers', () => probe(webPort));
    await fetch(`http://127.0.0.1:${webPort}/write`);
    const before = await docker.inspect('coreweb_webapp');

    const soft = { ...webSpec, compose: [{ ...webSpec.compose[0], environmentParameters: [...webSpec.compose[0].environmentParameters, 'UPDATED=1'] }] };
    const softHash = await submit(soft, 'coreappupdate');
    await ltc.mine(2);
    await until('soft update installed', async () => (await installed('webapp'))?.hash === softHash);
    const after = await docker.inspect('coreweb_webapp');
    assert.notEqual(after.Id, before.Id, 'the container was recreated');
    assert.ok(after.Config.Env.includes('UPDATED=1'));
    assert.ok((await until('webapp answers after the soft update', () => probe(webPort))).files.includes('marker'), 'data kept');

    const hard = { ...soft, compose: [{ ...soft.compose[0], hdd: 2 }] };
    const hardHash = await submit(hard, 'coreappupdate');
    await ltc.mine(2);
    await until('hard update installed', async () => (await installed('webapp'))?.hash === hardHash);
    const answer = await until('webapp answers after the hard update', () => probe(webPort));
    assert.ok(!answer.files?.includes('marker'), 'a reinstall starts on a new volume');
    const st = fs.statfsSync(path.join(node.dataDir, 'apps', 'mounts', 'coreweb_webapp'));
    assert.ok(st.blocks * st.bsize > 1.8 * 1024 ** 3, 'the volume has the new size');
  });

  it('an app whose expire ran out is no longer global and is removed from the node', async () => {
    const spec = { ...v8Spec(w.owner.legacyid, 'expapp', [component('x', docker.images.node, await freeAppPort(), 8080)]), expire: 4 };
    await submit(spec);
    await ltc.mine(2);
    const g = await until('expapp global', () => global('expapp'));
    assert.equal(last(ndjson(await node.get('/apps/installapplocally/expapp', node.headers.coreTeam))).status, 'success');
    assert.ok(await installed('expapp'));
    // Paid at height g.height: global through height g.height + 3, expired from g.height + 4.
    const tip = await ltc.rpc.call<number>('getblockcount');
    await ltc.mine(g.height + 4 - tip);
    await until('expapp removed', async () => !(await installed('expapp')));
    assert.equal(error(await node.get('/apps/appspecifications/expapp')).code, 404);
    assert.ok(!data(await node.get('/apps/globalappsspecifications')).some((a: any) => a.name === 'expapp'));
    assert.equal((await docker.cli(['ps', '-aq', '--filter', 'label=corenode.app=expapp'])).trim(), '');
  });
});
