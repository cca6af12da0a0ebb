/**
 * The tenant harness itself: two owners' apps installed side by side on one node process, each with its own
 * volume, neither seeing the other's files. Every attack file of this area starts from this layout.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { TestDocker } from '../support/docker.ts';
import type { Regtest } from '../support/litecoind.ts';
import { IDLE, component, last, ndjson, until, v8Spec } from '../apps/support.ts';
import { freeTenantPort, registerAndPay, removeFromDocker, paidWorld, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

describe('tenants: the harness (two owners on one node process)', function () {
  this.timeout(240_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;
  let registryAddress: string;

  before(async () => {
    ({ docker, ltc, registryAddress } = await paidWorld());
    node = await startTenantNode({ docker, ltc, registryAddress, wallets: w });
  });
  after(async () => {
    if (docker) await removeFromDocker(docker, ['tenanta', 'tenantb']);
    await node?.stop();
    await ltc?.stop();
  });

  it('installs an app of A and an app of B, each writing only to its own volume', async () => {
    for (const [owner, name] of [['a', 'tenanta'], ['b', 'tenantb']] as const) {
      const spec = v8Spec(w[owner].legacyid, name, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]);
      await registerAndPay(node, ltc, registryAddress, owner, w, spec);
      const lines = ndjson(await node.get(`/apps/installapplocally/${name}`, node.headers.admin));
      assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    }
    await docker.cli(['exec', 'coreweb_tenanta', 'sh', '-c', 'echo secret-of-a > /data/a.txt']);
    const mounts = path.join(node.dataDir, 'apps', 'mounts');
    await until('A’s file on the host', async () => fs.existsSync(path.join(mounts, 'coreweb_tenanta', 'appdata', 'a.txt')));
    assert.equal((await docker.cli(['exec', 'coreweb_tenantb', 'ls', '/data'])).trim(), '');
  });
});
