/**
 * Lifecycle verbs on an installed two-component app: every verb by the owner, the core team, the node's
 * admin (refused), another user (refused) and an anonymous caller (refused); `component_app` names; the
 * removed verbs; and a node restart that keeps the app running and managed (adopted by label, not
 * recreated; a killed container is restarted by the reconciler).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { component, data, error, freeAppPort, last, makeWallets, ndjson, pay, probe, signedMessage, startAppsNode, tmp, until, v8Spec, type AppsNode } from './support.ts';

const APP = 'lifecycle';
const CONTAINERS = ['coreapi_lifecycle', 'coreweb_lifecycle'];

describe('apps: lifecycle verbs, levels and a node restart', function () {
  this.timeout(240_000);
  let docker: TestDocker;
  let ltc: Regtest;
  let node: AppsNode;
  let registryAddress: string;
  let ports: number[];
  const dataDir = tmp('lifecycle');
  const w = makeWallets();

  const state = async (name: string) => (await docker.inspect(name)).State as { Running: boolean; Status: string };
  const ids = async () => Promise.all(CONTAINERS.map(async (c) => (await docker.inspect(c)).Id as string));

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    await ltc.mine(101);
    registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    node = await startAppsNode({ docker, ltc, wallets: w, registryAddress, dataDir });
    ports = [await freeAppPort(), await freeAppPort()];
    const spec = v8Spec(w.owner.legacyid, APP, [component('api', docker.images.node, ports[0], 9000), component('web', docker.images.node, ports[1], 8080)]);
    const hash = data(await node.post('/apps/appregister', await signedMessage(w.owner, spec), node.headers.owner));
    await pay(ltc, registryAddress, data(await node.post('/apps/calculateprice', spec)), hash);
    await ltc.mine(1);
    await until('global', async () => (await node.get(`/apps/appspecifications/${APP}`)).json?.status === 'success');
    const lines = ndjson(await node.get(`/apps/installapplocally/${APP}`, node.headers.coreTeam));
    assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
  });
  after(async () => {
    if (node) {
      await node.get(`/apps/appremove/${APP}/true`, node.headers.coreTeam).catch(() => {});
      await node.close();
    }
    await ltc?.stop();
    await unmountUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const refused = async (path: string) => {
    for (const who of ['admin', 'other'] as const) assert.equal(error(await node.get(path, node.headers[who])).code, 401, `${who} on ${path}`);
    assert.equal(error(await node.get(path)).code, 401, `anonymous on ${path}`);
  };

  for (const who of ['owner', 'coreTeam'] as const) {
    it(`stop, start, restart, kill and start again by the ${who}; admin, another user and anonymous refused`, async () => {
      const h = node.headers[who];
      // Stop only once the servers are up: node as PID 1 ignores SIGTERM until its handler is installed.
      await until('both answer', async () => (await probe(ports[0])) && probe(ports[1]));
      await refused(`/apps/appstop/${APP}`);
      assert.equal(data(await node.get(`/apps/appstop/${APP}`, h)).message, `Application ${APP} stopped`);
      for (const c of CONTAINERS) assert.equal((await state(c)).Running, false);
      // The reconciler leaves a stopped app stopped: it has run several times when the next look is made.
      const installed = data(await node.get(`/apps/installedapps/${APP}`))[0];
      assert.deepEqual(installed.components.map((c: any) => c.desired), ['stopped', 'stopped']);

      await refused(`/apps/appstart/web_${APP}`);
      assert.equal(data(await node.get(`/apps/appstart/web_${APP}`, h)).message, `Application web_${APP} started`);
      assert.equal((await state('coreweb_lifecycle')).Running, true);
      assert.equal((await state('coreapi_lifecycle')).Running, false);
      await refused(`/apps/appstart/${APP}`);
      data(await node.get(`/apps/appstart/${APP}`, h));
      for (const c of CONTAINERS) assert.equal((await state(c)).Running, true);
      await until('api answers', () => probe(ports[0]));

      await refused(`/apps/apprestart/${APP}`);
      const before = (await docker.inspect(CONTAINERS[0])).State.StartedAt;
      data(await node.get(`/apps/apprestart/${APP}`, h));
      const after = (await docker.inspect(CONTAINERS[0])).State.StartedAt;
      assert.notEqual(after, before);

      await refused(`/apps/appkill/${APP}`);
      data(await node.get(`/apps/appkill/${APP}`, h));
      for (const c of CONTAINERS) assert.equal((await state(c)).Running, false);
      data(await node.get(`/apps/appstart/${APP}`, h));
      await until('web answers', () => probe(ports[1]));
    });

    it(`redeploy (soft) and redeploycomponent by the ${who} keep the data; admin and others refused`, async () => {
      const h = node.headers[who];
      await fetch(`http://127.0.0.1:${ports[0]}/write`);
      const [apiBefore] = await ids();
      await refused(`/apps/redeploy/${APP}`);
      assert.equal(last(ndjson(await node.get(`/apps/redeploy/${APP}`, h))).status, 'success');
      const [apiAfter] = await ids();
      assert.notEqual(apiAfter, apiBefore, 'the container was recreated');
      assert.deepEqual((await until('api answers', () => probe(ports[0]))).files, ['marker']);
      await refused(`/apps/redeploycomponent/${APP}/api`);
      assert.equal(last(ndjson(await node.get(`/apps/redeploycomponent/${APP}/api`, h))).status, 'success');
      assert.deepEqual((await until('api answers', () => probe(ports[0]))).files, ['marker']);
      assert.equal(error(await node.get(`/apps/redeploy/api_${APP}`, h)).message, 'Component cannot be redeployed manually');
    });
  }

  it('removed verbs answer body code 410; installtemporarylocalapp is not routed', async () => {
    for (const v of ['apppause', 'appunpause', 'appmonitorstream', 'startmonitoring', 'stopmonitoring']) assert.equal(error(await node.get(`/apps/${v}/${APP}`, node.headers.owner)).code, 410, v);
    assert.equal((await node.get(`/apps/installtemporarylocalapp/${APP}`, node.headers.owner)).status, 404);
  });

  it('a node restart adopts the running containers by label; the reconciler restarts a killed one', async () => {
    const before = await ids();
    await node.close({ keepData: true });
    node = await startAppsNode({ docker, ltc, wallets: w, registryAddress, dataDir });
    assert.deepEqual(await ids(), before, 'adopted, not recreated');
    for (const c of CONTAINERS) assert.equal((await state(c)).Running, true);
    await until('api answers after the restart', () => probe(ports[0]));
    // Managed: a crash (killed outside the node) is restarted by the reconciler at once (first rung: 0 s).
    await docker.cli(['kill', CONTAINERS[1]]);
    await until('reconciler restarted web', async () => (await state(CONTAINERS[1])).Running);
    assert.deepEqual(await ids(), before);
    // A vanished container is made again from the installed spec, with its data volume.
    await docker.cli(['rm', '-f', CONTAINERS[0]]);
    await until('reconciler recreated api', async () => (await state(CONTAINERS[0]).catch(() => ({ Running: false }))).Running);
    assert.deepEqual((await until('api answers', () => probe(ports[0]))).files, ['marker']);
    // And the verbs still work on the adopted app.
    data(await node.get(`/apps/appstop/${APP}`, node.headers.owner));
    assert.equal((await state(CONTAINERS[1])).Running, false);
    data(await node.get(`/apps/appstart/${APP}`, node.headers.owner));
    await until('both answer', async () => (await probe(ports[0])) && probe(ports[1]));
  });

  it('appremove: refused to admin and others; by the owner removes containers, network, volumes', async () => {
    await refused(`/apps/appremove/${APP}`);
    const lines = ndjson(await node.get(`/apps/appremove/${APP}`, node.headers.owner));
    assert.equal(last(lines).status, 'success', JSON.stringify(lines));
    assert.equal((await docker.cli(['ps', '-aq', '--filter', `label=corenode.app=${APP}`])).trim(), '');
    assert.equal((await docker.cli(['network', 'ls', '-q', '--filter', `label=corenode.app=${APP}`])).trim(), '');
    assert.deepEqual(data(await node.get(`/apps/installedapps/${APP}`)), []);
    assert.equal(error(await node.get(`/apps/appstart/${APP}`, node.headers.owner)).code, 404);
  });
});
