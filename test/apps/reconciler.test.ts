/**
 * The reconciler against the real test Docker with a clock the test moves: the crash back-off ladder
 * (0 s, 30 s, 5 min, ...), its reset after 10 minutes of stable run, a stopped component left stopped,
 * and containers without the node's labels never touched.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import Datastore from 'nedb-promises';
import { TEST_ENGINE_REGISTRIES, ensureDocker, type TestDocker } from '../support/docker.ts';
import { Engine } from '../../plugins/apps/engine.ts';
import { Installer, type InstalledApp } from '../../plugins/apps/installer.ts';
import { PolicyHolder } from '../../plugins/apps/policy.ts';
import { Reconciler } from '../../plugins/apps/reconciler.ts';
import { Volumes } from '../../plugins/apps/volumes.ts';
import { labelsFor } from '../../plugins/apps/names.ts';
import { hardNofile, tmp, until } from './support.ts';

describe('apps: the reconciler', function () {
  this.timeout(120_000);
  let docker: TestDocker;
  let dir: string;
  let engine: Engine;
  let store: Datastore<InstalledApp>;
  let rec: Reconciler;
  let t = 1_000_000;
  const quiet = { info() {}, warn() {} };
  const NAME = 'corerecon';
  const FOREIGN = 'notmanaged';

  const running = async (name: string) => (await docker.inspect(name)).State.Running as boolean;
  const crash = async () => {
    await docker.cli(['kill', NAME]);
    await until('exited', async () => !(await running(NAME)));
  };

  before(async () => {
    docker = await ensureDocker();
    dir = tmp('recon');
    engine = new Engine({ socketPath: docker.socketPath, subnetBase: '172.23', publishHost: '127.0.0.1', nodeHostIp: '', nofile: hardNofile(), registries: TEST_ENGINE_REGISTRIES }, new Volumes(path.join(dir, 'v'), path.join(dir, 'm')));
    store = Datastore.create({ filename: path.join(dir, 'installed.db'), autoload: true }) as any;
    const policy = new PolicyHolder({ sources: [], file: path.join(dir, 'p.json'), isCoreTeam: () => false, verify: () => false, onChange: () => {}, now: () => t, log: quiet });
    const installer = new Installer(engine, store, policy, () => t);
    await docker.cli(['pull', docker.images.busybox]);
    for (const [name, labels] of [[NAME, labelsFor('recon', 'recon', 'h')], [FOREIGN, {}]] as const) {
      const c = await engine.docker.createContainer({ name, Image: docker.images.busybox, Cmd: ['/bin/sleep', '100000'], Labels: labels });
      await c.start();
    }
    await store.insert({ name: 'recon', owner: 'x', hash: 'h', version: 3, appSpecification: {}, installedAt: t, components: [{ name: 'recon', container: NAME, desired: 'running' }] });
    rec = new Reconciler(engine, installer, () => t, quiet);
    assert.equal(await rec.adopt(), 1);
  });
  after(async () => {
    for (const n of [NAME, FOREIGN]) await engine?.removeContainer(n).catch(() => {});
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('restarts at once after the first crash, then waits 30 s, then 5 min', async () => {
    await crash();
    await rec.tick();
    assert.equal(await running(NAME), true, 'first rung: 0 s');
    await crash();
    await rec.tick();
    assert.equal(await running(NAME), false, 'second crash waits');
    t += 29_999;
    await rec.tick();
    assert.equal(await running(NAME), false);
    t += 1;
    await rec.tick();
    assert.equal(await running(NAME), true, 'second rung: 30 s');
    await crash();
    t += 299_999;
    await rec.tick();
    assert.equal(await running(NAME), false);
    t += 1;
    await rec.tick();
    assert.equal(await running(NAME), true, 'third rung: 5 min');
  });

  it('10 minutes of stable run resets the ladder', async () => {
    await rec.tick(); // seen running
    t += 600_000;
    await rec.tick();
    await crash();
    await rec.tick();
    assert.equal(await running(NAME), true);
  });

  it('leaves a stopped component stopped and a container without its labels alone', async () => {
    await store.update({ name: 'recon' }, { $set: { 'components.0.desired': 'stopped' } });
    await crash();
    await docker.cli(['kill', FOREIGN]);
    t += 3_600_000;
    await rec.tick();
    assert.equal(await running(NAME), false);
    assert.equal(await running(FOREIGN), false);
    assert.ok(rec.stats.ticks >= 8);
  });
});
