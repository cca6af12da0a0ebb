/**
 * Attack: an app owner's unpaid test install asks for more disk than the node has (`hdd: 20`), which once
 * filled the node's disk to 0 bytes before failing. The volumes live on a small real filesystem here (a
 * loop-mounted ext4 file of 300 MB as `apps.volumesDir`) with a reserve configured: the install is refused
 * before anything is allocated, with the numbers named, and the filesystem's free space is unchanged.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { ok } from '../support/envelope.ts';
import { IDLE, component, last, ndjson, signedMessage, tmp, v8Spec } from '../apps/support.ts';
import { freeTenantPort, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

const run = promisify(execFile);
const free = (dir: string) => {
  const st = fs.statfsSync(dir);
  return st.bavail * st.bsize;
};

describe('tenants: an app may not take the disk the node has not got', function () {
  this.timeout(240_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let node: TenantNode;
  let dir: string;
  let volumesDir: string;

  before(async () => {
    docker = await ensureDocker();
    dir = tmp('small-disk');
    volumesDir = path.join(dir, 'volumes');
    fs.mkdirSync(volumesDir);
    const image = path.join(dir, 'disk.ext4');
    await run('truncate', ['-s', '300M', image]);
    await run('mkfs.ext4', ['-q', '-F', '-m', '0', image]);
    await run('mount', ['-o', 'loop', image, volumesDir]);
    node = await startTenantNode({ docker, wallets: w, apps: { volumesDir, diskReserveGB: 0.1 } });
  });
  after(async () => {
    await node?.stop();
    if (dir) {
      await unmountUnder(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const hdd of [20, 1]) {
    it(`refuses a test install asking ${hdd} GB on 300 MB, naming the numbers, and allocates nothing`, async () => {
      const before = free(volumesDir);
      const name = `bigdisk${hdd}`;
      const spec = v8Spec(w.b.legacyid, name, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE, hdd })]);
      ok(await node.post('/apps/appregister', await signedMessage(w.b, spec), node.headers.b));
      const lines = ndjson(await node.get(`/apps/testappinstall/${name}`, node.headers.b));
      const end = last(lines);
      assert.equal(end.status, 'error', JSON.stringify(end));
      assert.equal(end.step, 'check', JSON.stringify(end));
      assert.match(end.message, new RegExp(`not enough disk for the volumes of ${name}: ${hdd} GB asked, the filesystem holding ${volumesDir} has 0\\.2\\d GB free and the node keeps 0\\.10 GB of it in reserve`), JSON.stringify(end));
      // Nothing was allocated (the free space is as it was, no volume file) and nothing of the app runs.
      assert.ok(Math.abs(free(volumesDir) - before) < 1024 * 1024, `free space went from ${before} to ${free(volumesDir)} bytes`);
      assert.deepEqual(fs.readdirSync(volumesDir).filter((f) => f !== 'lost+found'), []);
      assert.ok(!lines.some((l) => l.step === 'pull' || l.step === 'volume'), JSON.stringify(lines));
      assert.equal((await docker.cli(['ps', '-a', '--filter', `label=corenode.app=${name}`, '--format', '{{.Names}}'])).trim(), '');
    });
  }
});
