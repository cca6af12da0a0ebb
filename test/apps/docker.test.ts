import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { Engine } from '../../plugins/apps/engine.ts';
import { ensureDocker } from '../support/docker.ts';

describe('apps: the test Docker', function () {
  this.timeout(180_000);
  it('runs dockerd with a local registry holding the test images', async () => {
    const d = await ensureDocker();
    const info = JSON.parse(await d.cli(['info', '--format', '{{json .}}']));
    assert.equal(info.Driver, 'overlay2');
    assert.ok(info.DockerRootDir.startsWith(d.root));
    const cat = await (await fetch(`http://${d.registry}/v2/_catalog`)).json();
    assert.deepEqual(cat.repositories.sort(), ['corenode-test/busybox', 'corenode-test/node']);
    console.log(`    (test docker started in ${d.startMs} ms)`);
  });

  it('the node reaches it through dockerode without loading dockerode\'s BuildKit session support (grpc)', async () => {
    const d = await ensureDocker();
    const engine = new Engine({ socketPath: d.socketPath } as ConstructorParameters<typeof Engine>[0], {} as ConstructorParameters<typeof Engine>[1]);
    const version = await engine.docker.version();
    assert.match(version.Version, /^\d+\./);
    const loaded = Object.keys(createRequire(import.meta.url).cache);
    assert.ok(loaded.some((f) => f.includes('/dockerode/lib/docker.js')), 'dockerode loaded');
    assert.ok(!loaded.some((f) => f.includes('/@grpc/')), 'grpc stays out');
  });
});
