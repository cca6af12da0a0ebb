/**
 * Attack: B, who paid nothing, starts a test install of an image on a registry that trickles its answers
 * (an attacker's server), to hold the node's install slot: it once held it for 65 s while the victim's
 * redeploy was answered "busy". The test install runs beside the slot: A's redeploy and a new install of A
 * go through while B's pull hangs, B gets one test install at a time, and the pull, making no progress, is
 * aborted after the configured time; nothing of B's app is left on Docker or the disk.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import type { Socket } from 'node:net';
import path from 'node:path';
import { ensureDocker, type TestDocker } from '../support/docker.ts';
import type { Regtest } from '../support/litecoind.ts';
import { err, ok } from '../support/envelope.ts';
import { IDLE, component, last, ndjson, signedMessage, until, v8Spec } from '../apps/support.ts';
import { freeTenantPort, registerAndPay, said, paidWorld, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

/**
 * A registry that answers its ping at once and then trickles: every other request gets its headers and a
 * byte every 500 ms, never the end. Counts what was asked and the connections still open.
 */
async function tricklingRegistry(port: number) {
  const asked: string[] = [];
  const open = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const srv = http.createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    if (req.url === '/v2/' || req.url === '/v2') {
      res.writeHead(200, { 'content-type': 'application/json', 'docker-distribution-api-version': 'registry/2.0' }).end('{}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/vnd.docker.distribution.manifest.v2+json', 'content-length': '100000', 'docker-distribution-api-version': 'registry/2.0' });
    if (req.method === 'HEAD') return; // headers only, never ended
    const t = setInterval(() => res.write(' '), 500);
    timers.add(t);
    res.on('close', () => {
      clearInterval(t);
      timers.delete(t);
    });
  });
  srv.on('connection', (s) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  await new Promise<void>((r) => srv.listen(port, '127.0.0.1', r));
  return {
    asked,
    open: () => open.size,
    close: () =>
      new Promise<void>((r) => {
        for (const t of timers) clearInterval(t);
        for (const s of open) s.destroy();
        srv.close(() => r());
      }),
  };
}

describe('tenants: an unpaid test install cannot hold the node', function () {
  this.timeout(300_000);
  const w = tenantWallets();
  const STALL_S = 8;
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;
  let registryAddress: string;
  let trickle: Awaited<ReturnType<typeof tricklingRegistry>>;
  let tricklePort: number;

  before(async () => {
    ({ docker, ltc, registryAddress } = await paidWorld());
    tricklePort = await freeTenantPort();
    trickle = await tricklingRegistry(tricklePort);
    node = await startTenantNode({
      docker,
      ltc,
      registryAddress,
      wallets: w,
      // The attacker's server is allowed as a registry here: the attack is its slowness, not its address.
      apps: { privateRegistries: [docker.registry, `127.0.0.1:${tricklePort}`], pullStallSeconds: STALL_S },
    });
    for (const name of ['victima', 'victimb']) {
      const spec = v8Spec(w.a.legacyid, name, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]);
      await registerAndPay(node, ltc, registryAddress, 'a', w, spec);
    }
    const installed = last(ndjson(await node.get('/apps/installapplocally/victima', node.headers.admin)));
    assert.equal(installed.status, 'success', JSON.stringify(installed));
  });
  after(async () => {
    await node?.stop();
    await trickle?.close();
    await ltc?.stop();
  });

  it('A’s redeploy and install go through while B’s test install hangs on the trickling registry, which is aborted after the no-progress time', async () => {
    const spec = v8Spec(w.b.legacyid, 'slowpull', [component('web', `127.0.0.1:${tricklePort}/slow/app:1`, await freeTenantPort(), 8080, { commands: IDLE })]);
    ok(await node.post('/apps/appregister', await signedMessage(w.b, spec), node.headers.b));
    const started = Date.now();
    const test = fetch(`${node.url}/apps/testappinstall/slowpull`, { headers: node.headers.b }).then(async (r) => ({ status: r.status, text: await r.text() }));
    await until('dockerd asking the trickling registry for the manifest', async () => trickle.asked.some((a) => /manifests/.test(a)));

    // B's pull hangs: one test install at a time for B, and the node's slot is free for A.
    const again = err(await node.get('/apps/testappinstall/slowpull', node.headers.b));
    assert.equal(again.name, 'Busy', JSON.stringify(again));
    assert.match(again.message, /one test installation at a time per owner/);
    const redeploy = await node.get('/apps/redeploy/victima', node.headers.a);
    assert.equal(redeploy.json?.status, undefined, `A's redeploy was refused: ${said(redeploy)}`);
    assert.equal(last(ndjson(redeploy)).status, 'success', redeploy.text);
    const install = await node.get('/apps/installapplocally/victimb', node.headers.admin);
    assert.equal(last(ndjson(install)).status, 'success', install.text);
    assert.equal((await docker.inspect('coreweb_victimb')).State.Running, true);

    // The stalled pull is aborted after the no-progress time, well before the test install's time limit.
    const answer = await test;
    const tookS = (Date.now() - started) / 1000;
    const lines = answer.text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    const end = last(lines);
    assert.equal(end.status, 'error', answer.text);
    assert.equal(end.step, 'pull', answer.text);
    assert.match(end.message, new RegExp(`made no progress for ${STALL_S} s; aborted`), answer.text);
    assert.ok(tookS >= STALL_S && tookS < STALL_S + 30, `the test install ended after ${tookS} s`);
    // The node let go of the pull; nothing of B's app is left on Docker or the disk, and B may try again.
    // (dockerd 20.10 keeps its own request to the registry open: its registry client does not cancel a
    // manifest request when the pull is cancelled, so the attacker's server keeps one connection of
    // dockerd until it answers or closes it. The node's side is closed and its slot was never held.)
    assert.equal((await docker.cli(['ps', '-a', '--filter', 'label=corenode.app=slowpull', '--format', '{{.Names}}'])).trim(), '');
    const volumes = path.join(node.dataDir, 'apps', 'volumes');
    assert.deepEqual(fs.readdirSync(volumes).filter((f) => f.includes('slowpull')), []);
    assert.equal((await node.get('/apps/installedapps')).json.data.some((a: any) => a.name === 'slowpull'), false);
    const retry = await fetch(`${node.url}/apps/testappinstall/slowpull`, { headers: node.headers.b });
    assert.match(retry.headers.get('content-type') ?? '', /ndjson/, 'B’s turn was not given back');
    assert.match(last((await retry.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l))).message, /made no progress/);
  });
});

describe('tenants: a test install ends at its time limit', function () {
  this.timeout(180_000);
  const w = tenantWallets();
  let node: TenantNode;
  let trickle: Awaited<ReturnType<typeof tricklingRegistry>>;

  after(async () => {
    await node?.stop();
    await trickle?.close();
  });

  it('a test install still pulling after testInstall.timeoutSeconds is ended and leaves nothing', async () => {
    const docker = await ensureDocker();
    const port = await freeTenantPort();
    trickle = await tricklingRegistry(port);
    // The stall limit is far; the test install's own time limit (3 s) ends it first.
    node = await startTenantNode({ docker, wallets: w, apps: { privateRegistries: [docker.registry, `127.0.0.1:${port}`], pullStallSeconds: 120, testInstall: { timeoutSeconds: 3 } } });
    const spec = v8Spec(w.b.legacyid, 'slowtest', [component('web', `127.0.0.1:${port}/slow/app:1`, await freeTenantPort(), 8080, { commands: IDLE })]);
    ok(await node.post('/apps/appregister', await signedMessage(w.b, spec), node.headers.b));
    const started = Date.now();
    const lines = ndjson(await node.get('/apps/testappinstall/slowtest', node.headers.b));
    const tookS = (Date.now() - started) / 1000;
    const end = last(lines);
    assert.equal(end.status, 'error', JSON.stringify(end));
    assert.match(end.message, /the test installation took longer than 3 s/, JSON.stringify(end));
    assert.ok(tookS < 60, `ended after ${tookS} s`);
    assert.equal((await docker.cli(['ps', '-a', '--filter', 'label=corenode.app=slowtest', '--format', '{{.Names}}'])).trim(), '');
    assert.equal((await docker.cli(['network', 'ls', '-q', '--filter', 'name=coreDockerNetwork_slowtest'])).trim(), '');
    const volumes = path.join(node.dataDir, 'apps', 'volumes');
    assert.deepEqual(fs.existsSync(volumes) ? fs.readdirSync(volumes).filter((f) => f.includes('slowtest')) : [], []);
  });
});
