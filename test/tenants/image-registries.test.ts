/**
 * Attack: an app owner names a registry on loopback, link-local (cloud metadata), a private range or the
 * node's own address as the image source, so that the node's dockerd sends requests to a service on the
 * node or beside it. A loopback service here stands for the node's own services and records every request:
 * the registry is refused at verification as written, and, for a host name that resolves to loopback, by
 * the test install right before the pull; the service hears nothing. The operator's allow-list holds the
 * test registry (its host and port) only.
 */
import assert from 'node:assert/strict';
import dns from 'node:dns/promises';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { ensureDocker, type TestDocker } from '../support/docker.ts';
import { err, ok } from '../support/envelope.ts';
import { IDLE, component, last, ndjson, signedMessage, v8Spec } from '../apps/support.ts';
import { freeTenantPort, said, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

/** A service on loopback that answers like a registry and records who asked. */
async function recordingService(port: number): Promise<{ requests: string[]; close(): Promise<void> }> {
  const requests: string[] = [];
  const srv = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.writeHead(404, { 'content-type': 'application/json' }).end('{}');
  });
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
  return { requests, close: () => new Promise((r) => srv.close(() => r())) };
}

describe('tenants: image registries that make the node attack itself', function () {
  this.timeout(240_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let node: TenantNode;
  let service: Awaited<ReturnType<typeof recordingService>>;
  let servicePort: number;

  before(async () => {
    docker = await ensureDocker();
    servicePort = await freeTenantPort();
    service = await recordingService(servicePort);
    node = await startTenantNode({ docker, wallets: w });
  });
  after(async () => {
    await node?.stop();
    await service?.close();
  });

  it('refuses a loopback, link-local, private or numeric-form registry at verification, naming why', async () => {
    const cases: [string, RegExp][] = [
      [`127.0.0.1:${servicePort}/x:1`, /loopback address/],
      [`localhost:${servicePort}/x:1`, /loopback name/],
      ['169.254.169.254/latest/meta-data:1', /link-local/],
      ['10.1.2.3:5000/x:1', /private-range/],
      ['192.168.1.1/x:1', /private-range/],
      ['172.17.0.1:5000/x:1', /private-range/],
      [`2130706433:${servicePort}/x:1`, /numeric form/],
      [`127.1:${servicePort}/x:1`, /numeric form/],
    ];
    for (const [i, [repotag, why]] of cases.entries()) {
      const spec = v8Spec(w.b.legacyid, `badreg${i}`, [component('web', repotag, await freeTenantPort(), 8080, { commands: IDLE })]);
      const a = await node.post('/apps/verifyappregistrationspecifications', spec);
      const e = err(a);
      assert.equal(e.code, 400, said(a));
      assert.match(e.message, /compose\[0\]\.repotag: the registry .* is /, said(a));
      assert.match(e.message, why, said(a));
      assert.match(e.message, /apps\.privateRegistries/, said(a));
      assert.equal(err(await node.post('/apps/appregister', await signedMessage(w.b, spec), node.headers.b)).code, 400);
    }
    // The allowed test registry still verifies.
    const fine = v8Spec(w.b.legacyid, 'goodreg', [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]);
    assert.equal((await node.post('/apps/verifyappregistrationspecifications', fine)).status, 200);
    assert.deepEqual(service.requests, []);
  });

  it('refuses a host name that resolves to loopback right before the pull; dockerd never calls the service', async () => {
    // The machine's own name: not an address as written, so verification lets it through; it resolves to
    // this machine (loopback here) only when looked up.
    const name = os.hostname().toLowerCase();
    const addresses = (await dns.lookup(name, { all: true })).map((a) => a.address);
    assert.ok(addresses.includes('127.0.0.1'), `this test needs ${name} to resolve to 127.0.0.1 (it resolves to ${addresses.join(', ')})`);
    const repotag = `${name}:${servicePort}/x:1`;
    const spec = v8Spec(w.b.legacyid, 'namedreg', [component('web', repotag, await freeTenantPort(), 8080, { commands: IDLE })]);
    ok(await node.post('/apps/appregister', await signedMessage(w.b, spec), node.headers.b));
    const lines = ndjson(await node.get('/apps/testappinstall/namedreg', node.headers.b));
    assert.deepEqual(service.requests, [], 'the node’s dockerd sent requests to the loopback service');
    const end = last(lines);
    assert.equal(end.status, 'error', JSON.stringify(end));
    assert.equal(end.step, 'pull', JSON.stringify(end));
    assert.match(end.message, new RegExp(`${name}.*resolves to 127\\.0\\.0\\.1, a loopback address`), JSON.stringify(end));
    // Nothing left: no container, network or image of the app, no volume file.
    assert.equal((await docker.cli(['ps', '-a', '--filter', 'label=corenode.app=namedreg', '--format', '{{.Names}}'])).trim(), '');
    assert.equal((await docker.cli(['images', '--format', '{{.Repository}}'])).split('\n').filter((r) => r.startsWith(name)).length, 0);
    const volumes = path.join(node.dataDir, 'apps', 'volumes');
    assert.deepEqual(fs.existsSync(volumes) ? fs.readdirSync(volumes).filter((f) => f.includes('namedreg')) : [], []);
  });
});
