/**
 * Guarding installed apps (issue 14) against the real test Docker: a component that exceeds its memory
 * limit is stopped with a recorded reason and never removed; an image replaced under the same tag behind
 * the node's back, a detached network, an unmounted volume and a vanished container are tampering events
 * (one record per app, kind and hour, with a count); the public tampering route (limit 1-1000, newest
 * first, operators in the query refused); and the node's event stream (installed, running, stopped,
 * tampering, removed).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { component, data, error, freeAppPort2, last, makeWallets, ndjson, registerPaid, startAppsNode, until, v8Spec, type AppsNode } from './support.ts';

const run = promisify(execFile);
const HOG = 'hog';
const TAMPER = 'tamper';
const TAMPER_C = `coret1_${TAMPER}`;

describe('apps: tampering events, resource checks and events', function () {
  this.timeout(300_000);
  let docker: TestDocker;
  let ltc: Regtest;
  let node: AppsNode;
  let tamperTag: string;
  const dataDir = fs.mkdtempSync('/tmp/apps2-guard-');
  const w = makeWallets();

  const events = async (names: string[]) => {
    const res = await fetch(`${node.url}/core/eventstream`, { headers: { 'last-event-id': '0' }, signal: AbortSignal.timeout(10_000) });
    const reader = res.body!.getReader();
    let text = '';
    try {
      while (!names.every((n) => text.includes(`event: ${n}\n`))) {
        const { value, done } = await reader.read();
        if (done) break;
        text += Buffer.from(value).toString('utf8');
      }
    } catch {
      // the timeout: the assertion below says what was missing
    } finally {
      await reader.cancel().catch(() => {});
    }
    return text;
  };

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    await ltc.mine(101);
    // The tampered app runs its own tag (a copy of busybox), so replacing it touches nothing else.
    tamperTag = `${docker.registry}/corenode-test/tamper:1`;
    await docker.cli(['pull', docker.images.busybox]);
    await docker.cli(['tag', docker.images.busybox, tamperTag]);
    await docker.cli(['push', tamperTag]);
    await docker.cli(['rmi', tamperTag]);
    const registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    node = await startAppsNode({
      docker,
      ltc,
      wallets: w,
      registryAddress,
      dataDir,
      apps: { guard: { intervalMs: 200, oomKillsPerHour: 1 }, monitor: { intervalMs: 500 } },
      config: { node: { eventStream: true } },
    });
    const hog = v8Spec(w.owner.legacyid, HOG, [
      // dd as the container's main process fills a 300 MB buffer under a 100 MB limit (no swap on this machine):
      // the kernel kills it for memory at once (a shell variable of 300 MB took 20 s to build).
      component('mem', docker.images.busybox, await freeAppPort2(), 7000, { commands: ['/bin/sh', '-c', 'echo started; sleep 1; exec dd if=/dev/zero of=/dev/null bs=300M count=1'], cpu: 0.1, ram: 100 }),
    ]);
    const tamper = v8Spec(w.owner.legacyid, TAMPER, [component('t1', tamperTag, await freeAppPort2(), 7000, { commands: ['/bin/sh', '-c', 'sleep 100000'], cpu: 0.1, ram: 100 })]);
    await registerPaid(node, ltc, registryAddress, w.owner, [hog, tamper]);
    for (const a of [TAMPER, HOG]) {
      const lines = ndjson(await node.get(`/apps/installapplocally/${a}`, node.headers.coreTeam));
      assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    }
  });
  after(async () => {
    if (node) {
      for (const a of [HOG, TAMPER]) await node.get(`/apps/appremove/${a}/true`, node.headers.coreTeam).catch(() => {});
      await node.close();
    }
    await docker?.cli(['rm', '-f', 'apps2-replacer']).catch(() => '');
    await docker?.cli(['rmi', tamperTag]).catch(() => '');
    await ltc?.stop();
    await unmountUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const installed = async (app: string) => data(await node.get(`/apps/installedapps/${app}`))[0];
  const kinds = async (app: string) => data(await node.get(`/apps/tamperingevents/${app}`)).map((e: any) => e.kind);

  it('a component over its memory limit is stopped with the reason recorded, not removed; appstart clears the reason', async () => {
    const comp = await until('stopped by the resource checks', async () => {
      const c = (await installed(HOG)).components[0];
      return c.stoppedReason ? c : null;
    });
    assert.equal(comp.desired, 'stopped');
    assert.match(comp.stoppedReason, /over its memory limit: killed for memory 1 times/);
    const st = (await docker.inspect('coremem_hog')).State;
    assert.equal(st.Running, false);
    assert.equal(st.OOMKilled, true);
    // Left stopped: the reconciler does not start it again.
    await new Promise((r) => setTimeout(r, 1000)); // several reconciler rounds (200 ms) to prove a negative
    assert.equal((await docker.inspect('coremem_hog')).State.Running, false);
    assert.deepEqual(data(await node.get(`/apps/installedapps/${HOG}`)).map((a: any) => a.name), [HOG], 'still installed');
    // A start by the owner clears the reason; the app exceeds its limit again and is stopped again.
    data(await node.get(`/apps/appstart/${HOG}`, node.headers.owner));
    const again = await until('stopped again', async () => {
      const c = (await installed(HOG)).components[0];
      return c.stoppedAt > comp.stoppedAt ? c : null;
    });
    assert.equal(again.desired, 'stopped');
  });

  it('an image replaced under the same tag behind the node\'s back is a tampering event', async () => {
    await until('image recorded', async () => (await installed(TAMPER)).components[0].imageId);
    assert.deepEqual(await kinds(TAMPER), []);
    await docker.cli(['run', '--name', 'apps2-replacer', tamperTag, '/bin/sh', '-c', 'echo x > /replaced']);
    await docker.cli(['commit', 'apps2-replacer', tamperTag]);
    await docker.cli(['rm', '-f', 'apps2-replacer']);
    await until('image_digest_changed', async () => (await kinds(TAMPER)).includes('image_digest_changed'));
    const ev = data(await node.get(`/apps/tamperingevents/${TAMPER}`)).find((e: any) => e.kind === 'image_digest_changed');
    assert.equal(ev.app, TAMPER);
    assert.equal(ev.container, TAMPER_C);
    assert.equal(ev.ownerLegacyid, w.owner.legacyid);
    assert.equal(ev.hour % 3_600_000, 0);
    // One record per (app, kind, hour): later sightings count on it.
    await until('counted', async () => data(await node.get(`/apps/tamperingevents/${TAMPER}`)).find((e: any) => e.kind === 'image_digest_changed').count >= 3);
    assert.equal((await kinds(TAMPER)).filter((k: string) => k === 'image_digest_changed').length, 1);
  });

  it('a detached network, an unmounted volume and a vanished container are tampering events', async () => {
    await docker.cli(['network', 'disconnect', `coreDockerNetwork_${TAMPER}`, TAMPER_C]);
    await until('network_detached', async () => (await kinds(TAMPER)).includes('network_detached'));
    await run('umount', ['-l', path.join(dataDir, 'apps', 'mounts', TAMPER_C)]);
    await until('mount_vanished', async () => (await kinds(TAMPER)).includes('mount_vanished'));
    await docker.cli(['rm', '-f', TAMPER_C]);
    await until('container_vanished', async () => (await kinds(TAMPER)).includes('container_vanished'));
  });

  it('tamperingevents is public, newest first, limit 1-1000; query values reach the store as strings', async () => {
    const all = data(await node.get('/apps/tamperingevents'));
    assert.ok(all.length >= 4);
    for (let i = 1; i < all.length; i++) assert.ok(all[i - 1].lastSeen >= all[i].lastSeen, 'newest first');
    assert.equal(data(await node.get(`/apps/tamperingevents/${TAMPER}?limit=1`)).length, 1);
    assert.deepEqual(data(await node.get('/apps/tamperingevents/nosuchapp')), []);
    for (const q of ['limit=0', 'limit=1001', 'limit=abc', 'limit[$gt]=0', 'appname[$ne]=x', 'other=1']) assert.equal(error(await node.get(`/apps/tamperingevents?${q}`)).code, 400, q);
    assert.equal(error(await node.get('/apps/tamperingevents/bad$name')).code, 400);
  });

  it('the event stream carries installed, running, stopped, tampering and removed', async () => {
    const lines = ndjson(await node.get(`/apps/appremove/${HOG}`, node.headers.owner));
    assert.equal(last(lines).status, 'success');
    const text = await events(['apps.installed', 'apps.running', 'apps.stopped', 'apps.tampering', 'apps.removed']);
    for (const n of ['apps.installed', 'apps.running', 'apps.stopped', 'apps.tampering', 'apps.removed']) assert.ok(text.includes(`event: ${n}\n`), `${n} in ${text.slice(0, 2000)}`);
    assert.match(text, /"reason":"over its memory limit/);
  });
});
