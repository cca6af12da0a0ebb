/**
 * Vendors change manifests while the node serves: every change is validated and swapped in at once, no
 * request fails meanwhile, and a bad manifest leaves the running routes as they were.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { TestNode } from '../support/node.ts';
import { FIXTURE_MANIFESTS, eventually, startFixtureNode } from '../support/fixture.ts';

const ORIGINAL = fs.readFileSync(path.join(FIXTURE_MANIFESTS, 'fixture.yaml'), 'utf8');
const withExtra = (n: number) =>
  ORIGINAL.replace('routes:\n', `routes:\n${Array.from({ length: n }, (_, i) => `  - { id: fixture.extra${i}, path: /extra/${i}, handler: echo }\n`).join('')}`);

/** Requests fired back to back from `workers` loops until stopped; every answer must be a success. */
function load(node: TestNode, paths: string[], workers = 8) {
  let running = true;
  let sent = 0;
  const failures: string[] = [];
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = w; running; i++) {
      const p = paths[i % paths.length];
      try {
        const res = await node.get(p);
        sent++;
        if (res.status !== 200 || (res.json?.status !== 'success' && p !== '/openapi.json')) failures.push(`${p}: ${res.status} ${res.text.slice(0, 200)}`);
      } catch (e) {
        failures.push(`${p}: ${(e as Error).message}`);
      }
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return { sent, failures };
    },
  };
}

describe('reload under load', () => {
  let node: TestNode & { manifests: string };
  let file: string;
  const failedReloads: string[] = [];
  before(async () => {
    node = await startFixtureNode({ watch: true });
    file = path.join(node.manifests, 'fixture.yaml');
    node.host.events.on('host:reload-failed', (ev) => failedReloads.push((ev.data as { error: string }).error));
  });
  after(() => node.close());

  it('swaps changed manifests seen by the folder watch while requests keep succeeding', async () => {
    const traffic = load(node, ['/fixture/echo/a', '/fx/noquery', '/openapi.json', '/fixture/typed/3']);
    // 1. A vendor adds routes (written in place, so the watch may also see a half-written file).
    fs.writeFileSync(file, withExtra(3));
    await eventually(async () => (await node.get('/fixture/extra/2')).json?.status === 'success');
    assert.ok(node.host.routes.some((r) => r.spec.id === 'fixture.extra0'));

    // 2. A broken manifest: logged and refused, the running routes stay.
    const before = failedReloads.length;
    fs.writeFileSync(file, withExtra(3).replace('routes:\n', 'routes:\n  - { id: fixture.broken, path: /broken\n'));
    await eventually(() => failedReloads.length > before);
    assert.match(failedReloads.at(-1)!, /fixture\.yaml:\d+:\d+: /);
    assert.equal((await node.get('/fixture/extra/2')).json.status, 'success');
    assert.equal((await node.get('/fixture/broken')).status, 404);

    // 3. A new manifest file is added and an old route removed, in one change of the folder.
    fs.writeFileSync(file, withExtra(1));
    await eventually(async () => (await node.get('/fixture/extra/2')).status === 404);
    assert.equal((await node.get('/fixture/extra/0')).json.status, 'success');

    const { sent, failures } = await traffic.stop();
    assert.deepEqual(failures, []);
    assert.ok(sent > 50, `only ${sent} requests were sent`);
  });

  it('host.reload() swaps repeatedly under load without a failed request', async () => {
    const traffic = load(node, ['/fixture/echo/a', '/fx/noquery', '/fixture/typed/3']);
    for (let i = 0; i < 20; i++) {
      fs.writeFileSync(file, withExtra(1 + (i % 5)));
      const res = await node.host.reload();
      assert.equal(res.ok, true, (res as { error?: string }).error);
      assert.equal(node.host.routes.filter((r) => r.spec.id.startsWith('fixture.extra')).length, 1 + (i % 5));
    }
    fs.writeFileSync(file, ORIGINAL.replace('handler: rawLength', 'handler: nosuch'));
    const bad = await node.host.reload();
    assert.equal(bad.ok, false);
    assert.match((bad as { error: string }).error, /names handler 'nosuch'/);
    assert.equal((await node.get('/fixture/extra/4')).json.status, 'success', 'the last good set still serves');
    const { failures } = await traffic.stop();
    assert.deepEqual(failures, []);
  });

  it('a manifests folder replaced by a rename is picked up, and watched from then on', async () => {
    const next = `${node.manifests}.next`;
    fs.cpSync(node.manifests, next, { recursive: true });
    fs.writeFileSync(path.join(next, 'fixture.yaml'), withExtra(2));
    const old = `${node.manifests}.old`;
    fs.renameSync(node.manifests, old);
    fs.renameSync(next, node.manifests);
    await eventually(async () => (await node.get('/fixture/extra/1')).json?.status === 'success');
    fs.rmSync(old, { recursive: true, force: true });
    fs.writeFileSync(file, withExtra(3));
    await eventually(async () => (await node.get('/fixture/extra/2')).json?.status === 'success');
  });

  it('a removed manifest file takes its plugin out; restoring it brings it back', async () => {
    fs.writeFileSync(file, ORIGINAL);
    await node.host.reload();
    fs.renameSync(file, `${file}.off`);
    await eventually(async () => (await node.get('/fixture/echo')).status === 404);
    fs.renameSync(`${file}.off`, file);
    await eventually(async () => (await node.get('/fixture/echo')).json?.status === 'success');
  });
});
