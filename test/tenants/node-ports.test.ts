/**
 * Attack: an app owner asks to publish a port the node itself uses: the deployment trigger (9001), the
 * file sync's ports (Syncthing's 22000 and 21027), the node API's neighbours, the daemon's RPC and P2P
 * ports. Each is refused with the port and its user named, at verification and at registration, and Docker
 * never sees a container of the app.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { ensureDocker, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { err } from '../support/envelope.ts';
import { IDLE, component, signedMessage, v8Spec } from '../apps/support.ts';
import { TENANT_PLUGINS, freeTenantPort, said, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

describe('tenants: apps may not publish the node’s own ports', function () {
  this.timeout(240_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;
  let p2pPort: number;

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    p2pPort = Number(/^port=(\d+)$/m.exec(fs.readFileSync(ltc.confFile, 'utf8'))![1]);
    node = await startTenantNode({
      docker,
      ltc,
      wallets: w,
      // File sync in its default mode (an external Syncthing on this machine).
      plugins: [...TENANT_PLUGINS, 'filesync'],
      config: { daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password }, confFile: ltc.confFile } },
    });
  });
  after(async () => {
    await node?.stop();
    await ltc?.stop();
  });

  const own = () => [
    [9001, /deployment trigger/],
    [22000, /file sync/],
    [21027, /file sync/],
    [node.port + 2, /file-sync peers/],
    [node.port - 1, /home UI/],
    [ltc.rpcPort, /daemon/],
    [p2pPort, /daemon/],
  ] as [number, RegExp][];

  it('refuses each at verification and registration, naming the port and what uses it', async () => {
    for (const [i, [port, what]] of own().entries()) {
      const spec = v8Spec(w.b.legacyid, `ownport${i}`, [component('web', docker.images.busybox, port, 8080, { commands: IDLE })]);
      const verified = await node.post('/apps/verifyappregistrationspecifications', spec);
      const e = err(verified);
      assert.equal(e.code, 400, said(verified));
      assert.match(e.message, new RegExp(`compose\\[0\\]\\.ports\\[0\\]: port ${port} is used by the node itself`), said(verified));
      assert.match(e.message, what, said(verified));
      const registered = await node.post('/apps/appregister', await signedMessage(w.b, spec), node.headers.b);
      assert.match(err(registered).message, new RegExp(`port ${port} is used by the node itself`), said(registered));
    }
    // Nothing of the attacker's stored or run: no temporary message to test-install, no container on Docker.
    const temps = (await node.get('/apps/temporarymessages')).json.data as any[];
    assert.deepEqual(temps.filter((t) => /^ownport/.test(t.appSpecification.name)), []);
    assert.equal((await docker.cli(['ps', '-a', '--filter', 'name=ownport', '--format', '{{.Names}}'])).trim(), '');
  });

  it('still accepts a port the node does not use', async () => {
    const spec = v8Spec(w.b.legacyid, 'freeport', [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]);
    const a = await node.post('/apps/verifyappregistrationspecifications', spec);
    assert.equal(a.status, 200, said(a));
  });
});
