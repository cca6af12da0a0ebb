import assert from 'node:assert/strict';
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
});
