/**
 * The follower with the real apps plugin (not the double): a paid, installed app whose component says
 * `r:/data` on the test Docker; its real loop-mounted volume's `appdata` becomes a Syncthing folder of the
 * node's own supervised Syncthing (alone with the app: the origin, send-receive); what the container
 * writes is in the folder Syncthing indexes; `appremove` takes the folder out of Syncthing's config.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TEST_REGISTRY_HOSTS, ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { freePortIn } from '../support/ports.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { startNode, type TestNode } from '../support/node.ts';
import { login } from '../support/wallets.ts';
import { component, data, hardNofile, last, makeWallets, ndjson, registerPaid, v8Spec, writePolicy, type AppsNode } from '../apps/support.ts';
import { apiKeyOf, tmp, until } from './support.ts';

const APP = 'syncedapp';
const CONTAINER = `coreweb_${APP}`;

describe('filesync: an r: app installed by the real apps plugin', function () {
  this.timeout(240_000);
  let docker: TestDocker;
  let ltc: Regtest;
  let node: AppsNode;
  let registryAddress: string;
  let port: number;
  const dataDir = tmp('realapps');
  const w = makeWallets();
  const home = path.join(dataDir, 'filesync', 'syncthing');
  const stFolder = async (id: string) => {
    const res = await fetch(`http://127.0.0.1:27201/rest/config/folders/${id}`, { headers: { 'X-API-Key': apiKeyOf(home) } });
    return res.status === 200 ? res.json() : null;
  };

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    await ltc.mine(101);
    registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    const policyFile = path.join(dataDir, 'policy-source.json');
    await writePolicy(policyFile, w.coreTeam);
    node = (await startNode({
      plugins: ['identity', 'daemon', 'explorer', 'apps', 'filesync'],
      dataDir,
      config: {
        initial: { legacyid: w.admin.legacyid },
        coreTeam: [w.coreTeam.legacyid],
        apps: { docker: { socketPath: docker.socketPath, nofile: hardNofile() }, publishHost: '127.0.0.1', registryAddress, privateRegistries: TEST_REGISTRY_HOSTS, paymentPollMs: 100, reconcileIntervalMs: 200, policy: { sources: [policyFile], refreshSeconds: 0.2 }, price: { coinUsd: 1 } },
        daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password } },
        explorer: { pollIntervalMs: 50, retryIntervalMs: 100, prefetch: 8 },
        filesync: { mode: 'supervise', guiPort: 27201, peerPort: 27202, listenHost: '127.0.0.1', globalDiscovery: false, relays: false, follow: { enabled: true, intervalMs: 300 } },
      },
    })) as unknown as AppsNode;
    node.headers = {} as AppsNode['headers'];
    await until('Syncthing answers', async () => (await node.get('/filesync/health')).json?.status === 'success');
    for (const k of ['owner', 'coreTeam'] as const) node.headers[k] = { legacyidauth: (await login(node as TestNode, w[k])).header };
    port = await freePortIn(27300, 27399);
    await registerPaid(node, ltc, registryAddress, w.owner, [v8Spec(w.owner.legacyid, APP, [component('web', docker.images.node, port, 9000, { containerData: 'r:/data' })])]);
    const lines = ndjson(await node.get(`/apps/installapplocally/${APP}`, node.headers.coreTeam));
    assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
  });
  after(async () => {
    await node?.get(`/apps/appremove/${APP}/true`, node.headers.coreTeam).catch(() => {});
    await node?.close({ keepData: true });
    await ltc?.stop();
    await unmountUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("the component's mounted volume is a send-receive Syncthing folder; the container's writes are indexed; appremove drops the folder", async () => {
    const f = await until('the folder in Syncthing', () => stFolder(CONTAINER));
    const installed = data(await node.get(`/apps/installedapps/${APP}`))[0];
    assert.equal(installed.components[0].name, 'web');
    assert.match(f.path, new RegExp(`/${CONTAINER}/appdata$`));
    assert.ok(fs.readFileSync('/proc/self/mounts', 'utf8').includes(path.dirname(f.path)), 'the folder is on the mounted volume');
    await until('send-receive', async () => (await stFolder(CONTAINER))?.type === 'sendreceive');
    // The node image writes a marker into /data on /write.
    await until('the app answers', async () => (await fetch(`http://127.0.0.1:${port}/write`).catch(() => null))?.ok);
    await until('the marker indexed', async () => {
      const [r] = data(await node.post('/apps/promotedfolders', { appname: APP }));
      return r.mounted && r.acquired && r.localItems >= 1;
    });
    assert.equal(last(ndjson(await node.get(`/apps/appremove/${APP}/true`, node.headers.coreTeam))).status, 'success');
    await until('the folder out of Syncthing', async () => (await stFolder(CONTAINER)) === null);
  });
});
