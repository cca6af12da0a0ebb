/**
 * The whole path on real parts: a signed registration, a payment on the regtest chain that the explorer
 * scans, the signed policy, an install that pulls from the local registry, and a published port that
 * answers; for a v3 single-container app and a v8 two-component app. Unpaid, under-paid and unsigned
 * registrations never become global; a reorganisation that drops a payment drops the permanence.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { ensureDocker, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { ethereumWallet } from '../support/wallets.ts';
import { component, data, error, freeAppPort, last, makeWallets, ndjson, pay, probe, signedMessage, startAppsNode, until, v3Spec, v8Spec, type AppsNode } from './support.ts';

describe('apps: register, pay, install', function () {
  this.timeout(240_000);
  let docker: TestDocker;
  let ltc: Regtest;
  let node: AppsNode;
  let registryAddress: string;
  const w = makeWallets();

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    await ltc.mine(101);
    registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    node = await startAppsNode({ docker, ltc, wallets: w, registryAddress });
  });
  after(async () => {
    if (node) {
      for (const app of ['webthree', 'composed']) await node.get(`/apps/appremove/${app}/true`, node.headers.coreTeam).catch(() => {});
      await node.close();
    }
    await ltc?.stop();
  });

  /** Register as the owner, pay the price, wait until the spec is global. */
  async function registerAndPay(spec: Record<string, any>) {
    const verdict = data(await node.post('/apps/verifyappregistrationspecifications', spec));
    assert.equal(verdict.name, spec.name);
    const hash = data(await node.post('/apps/appregister', await signedMessage(w.owner, spec), node.headers.owner));
    assert.match(hash, /^[0-9a-f]{64}$/);
    assert.equal(data(await node.get(`/apps/temporarymessages/${hash}`))[0].appSpecification.name, spec.name);
    const price = data(await node.post('/apps/calculateprice', spec));
    await pay(ltc, registryAddress, price, hash);
    await ltc.mine(1);
    const global = await until(`${spec.name} global`, async () => (await node.get(`/apps/appspecifications/${spec.name}`)).json?.data?.hash);
    assert.equal(global, hash);
    return hash;
  }

  it('a v3 app: registered, paid, installed, answering on its published port', async () => {
    const port = await freeAppPort();
    const spec = v3Spec(w.owner.legacyid, 'webthree', docker.images.node, port);
    const hash = await registerAndPay(spec);
    assert.equal(data(await node.get('/apps/appowner/webthree')), w.owner.legacyid);
    assert.equal(data(await node.get('/apps/apporiginalowner/webthree')), w.owner.legacyid);
    assert.ok(data(await node.get('/apps/permanentmessages')).some((m: any) => m.hash === hash));
    assert.ok(data(await node.get('/apps/hashes')).some((m: any) => m.hash === hash));
    assert.equal(data(await node.get(`/apps/messagescount/${w.owner.legacyid}`)), 1);
    const info = data(await node.get('/apps/registrationinformation'));
    assert.equal(info.address, registryAddress);
    assert.equal(data(await node.get('/apps/latestspecificationversion')), 8);
    assert.ok(data(await node.get('/apps/availableapps')).some((a: any) => a.name === 'webthree'));
    assert.equal(data(await node.get(`/apps/globalappsspecifications?owner=${w.owner.legacyid}`))[0].name, 'webthree');

    const lines = ndjson(await node.get('/apps/installapplocally/webthree', node.headers.coreTeam));
    assert.equal(last(lines).status, 'success', JSON.stringify(lines));
    assert.ok(lines.some((l) => l.step === 'pull'), 'the image was pulled');
    const answer = await until('published port answers', () => probe(port));
    assert.equal(answer.app, 'webthree');

    const running = data(await node.get('/apps/listrunningapps'));
    const c = running.find((r: any) => r.Names[0] === '/corewebthree');
    assert.ok(c, JSON.stringify(running));
    assert.equal(c.Labels['corenode.app'], 'webthree');
    const inspect = await docker.inspect('corewebthree');
    assert.equal(inspect.HostConfig.NanoCpus, 0.5e9);
    assert.equal(inspect.HostConfig.Memory, 200 * 1024 * 1024);
    assert.equal(inspect.HostConfig.RestartPolicy.Name, 'no');
    assert.equal(inspect.HostConfig.NetworkMode, 'coreDockerNetwork_webthree');
    // The data folder is on a loop-mounted ext4 volume of the spec's size.
    const bind = inspect.HostConfig.Binds[0].split(':')[0];
    const mount = fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').find((l) => bind.startsWith(l.split(' ')[1] + '/'));
    assert.ok(mount && mount.startsWith('/dev/loop') && mount.includes(' ext4 '), `${bind} on ${mount}`);
    const st = fs.statfsSync(bind);
    assert.ok(st.blocks * st.bsize > 0.9 * 1024 ** 3 && st.blocks * st.bsize <= 1024 ** 3);
    const wrote = await probe(port).then(() => fetch(`http://127.0.0.1:${port}/write`).then((r) => r.json()));
    assert.equal(wrote.wrote, '/data/marker');
    assert.ok(fs.existsSync(`${bind}/marker`));

    assert.equal(data(await node.get('/apps/installedapps/webthree'))[0].name, 'webthree');
    assert.deepEqual(data(await node.get('/apps/appsresources')), { appsCpusLocked: 0.5, appsRamLocked: 200, appsHddLocked: 1 });
    assert.ok(data(await node.get('/apps/listappsimages')).some((i: any) => i.RepoTags.includes(docker.images.node)));
  });

  it('a v8 two-component app: both components installed in compose order, each answering', async () => {
    const [p1, p2] = [await freeAppPort(), await freeAppPort()];
    const spec = v8Spec(w.owner.legacyid, 'composed', [component('api', docker.images.node, p1, 9000), component('web', docker.images.node, p2, 8080, { containerData: '/data|0:/apidata' })]);
    await registerAndPay(spec);
    const lines = ndjson(await node.get('/apps/installapplocally/composed', node.headers.admin));
    assert.equal(last(lines).status, 'success', JSON.stringify(lines));
    const starts = lines.filter((l) => l.step === 'start').map((l) => l.component);
    assert.deepEqual(starts, ['api', 'web']);
    assert.equal((await until('api answers', () => probe(p1))).host, 'api');
    assert.equal((await until('web answers', () => probe(p2))).host, 'web');
    const names = data(await node.get('/apps/listallapps')).map((c: any) => c.Names[0]);
    assert.ok(names.includes('/coreapi_composed') && names.includes('/coreweb_composed'), names.join());
    // web sees api's primary data folder.
    await fetch(`http://127.0.0.1:${p1}/write`);
    assert.match(await docker.cli(['exec', 'coreweb_composed', '/bin/ls', '/apidata']), /marker/);
  });

  it('appremove by the core team (force) and by the owner leaves nothing of either app', async () => {
    for (const [app, who, force] of [['webthree', 'coreTeam', '/true'], ['composed', 'owner', '']] as const) {
      const lines = ndjson(await node.get(`/apps/appremove/${app}${force}`, node.headers[who]));
      assert.equal(last(lines).status, 'success', JSON.stringify(lines));
      assert.equal((await docker.cli(['ps', '-aq', '--filter', `label=corenode.app=${app}`])).trim(), '');
    }
    assert.deepEqual(data(await node.get('/apps/installedapps')), []);
    assert.equal(fs.readdirSync(`${node.dataDir}/apps/volumes`).length, 0);
    assert.ok(!fs.readFileSync('/proc/self/mounts', 'utf8').includes(node.dataDir));
  });

  it('unsigned, wrongly signed, stale and duplicate registrations are refused', async () => {
    const spec = v3Spec(w.owner.legacyid, 'nosig', docker.images.node, await freeAppPort());
    const forged = await signedMessage(w.other, spec);
    assert.equal(error(await node.post('/apps/appregister', forged, node.headers.other)).name, 'InvalidSignature');
    const msg = await signedMessage(w.owner, spec);
    assert.equal(error(await node.post('/apps/appregister', { ...msg, signature: 'x' }, node.headers.owner)).name, 'InvalidSignature');
    const stale = await signedMessage(w.owner, spec, 'coreappregister', Date.now() - 2 * 3600_000);
    assert.match(error(await node.post('/apps/appregister', stale, node.headers.owner)).message, /timestamp/);
    assert.match(error(await node.post('/apps/appregister', await signedMessage(w.owner, spec, 'coreappupdate'), node.headers.owner)).message, /type/);
    assert.equal(error(await node.post('/apps/appregister', msg)).code, 401);
    // An ethereum owner signs with personal-sign (0x-hex).
    const eth = ethereumWallet();
    const ethHash = data(await node.post('/apps/appregister', await signedMessage(eth, v3Spec(eth.legacyid, 'ethowned', docker.images.node, await freeAppPort())), node.headers.other));
    assert.equal(data(await node.get(`/apps/temporarymessages/${ethHash}`))[0].signer, eth.legacyid);
    const dup = v3Spec(w.owner.legacyid, 'webthree', docker.images.node, await freeAppPort());
    assert.equal(error(await node.post('/apps/appregister', await signedMessage(w.owner, dup), node.headers.owner)).name, 'AppExists');
  });

  it('unpaid and under-paid registrations never become global; a paid one after them does', async () => {
    const unpaid = v3Spec(w.owner.legacyid, 'unpaid', docker.images.node, await freeAppPort());
    const under = v3Spec(w.owner.legacyid, 'underpaid', docker.images.node, await freeAppPort());
    const paid = v3Spec(w.owner.legacyid, 'paidlater', docker.images.node, await freeAppPort());
    data(await node.post('/apps/appregister', await signedMessage(w.owner, unpaid), node.headers.owner));
    const underHash = data(await node.post('/apps/appregister', await signedMessage(w.owner, under), node.headers.owner));
    const price = data(await node.post('/apps/calculateprice', under));
    await pay(ltc, registryAddress, Number((price - 0.01).toFixed(8)), underHash);
    await ltc.mine(2);
    const paidHash = data(await node.post('/apps/appregister', await signedMessage(w.owner, paid), node.headers.owner));
    await pay(ltc, registryAddress, data(await node.post('/apps/calculateprice', paid)), paidHash);
    await ltc.mine(1);
    await until('paid app global', async () => (await node.get('/apps/appspecifications/paidlater')).json?.status === 'success');
    // The under-paid payment is in an earlier block than the paid one, so it has been judged by now.
    assert.equal(error(await node.get('/apps/appspecifications/underpaid')).code, 404);
    assert.equal(error(await node.get('/apps/appspecifications/unpaid')).code, 404);
    const globals = data(await node.get('/apps/globalappsspecifications')).map((g: any) => g.name);
    assert.ok(!globals.includes('underpaid') && !globals.includes('unpaid'), globals.join());
  });

  it('a reorganisation that drops the payment drops the permanence', async () => {
    const spec = v3Spec(w.owner.legacyid, 'reorged', docker.images.node, await freeAppPort());
    const hash = await registerAndPay(spec);
    const tx = data(await node.get('/apps/permanentmessages/' + hash))[0].txid;
    const block = (await ltc.rpc.call<any>('getrawtransaction', [tx, 1])).blockhash;
    await ltc.rpc.call('invalidateblock', [block]);
    await until('permanence dropped', async () => (await node.get('/apps/appspecifications/reorged')).json?.status === 'error');
    assert.deepEqual(data(await node.get('/apps/permanentmessages/' + hash)), []);
    await ltc.rpc.call('reconsiderblock', [block]);
    await until('permanent again', async () => (await node.get('/apps/appspecifications/reorged')).json?.status === 'success');
  });

  it('an update signed by the current owner moves the app to a new owner; one signed by another is refused', async () => {
    const g = data(await node.get('/apps/appspecifications/paidlater'));
    const { hash: _h, height: _ht, ...current } = g;
    const updated = { ...current, owner: w.other.legacyid, description: 'new owner' };
    assert.equal(error(await node.post('/apps/appupdate', await signedMessage(w.other, updated, 'coreappupdate'), node.headers.other)).name, 'InvalidSignature');
    const hash = data(await node.post('/apps/appupdate', await signedMessage(w.owner, updated, 'coreappupdate'), node.headers.owner));
    await pay(ltc, registryAddress, data(await node.post('/apps/calculateprice', updated)), hash);
    await ltc.mine(1);
    await until('owner changed', async () => (await node.get('/apps/appowner/paidlater')).json?.data === w.other.legacyid);
    assert.equal(data(await node.get('/apps/apporiginalowner/paidlater')), w.owner.legacyid);
  });
});
