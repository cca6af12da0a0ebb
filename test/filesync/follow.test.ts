/**
 * App data that follows the app, with three nodes, each supervising its own real Syncthing on loopback
 * (own home, GUI/API port, listen address; discovery and relays off). Where apps run comes from the peer
 * network's test double; the components' volumes are real tmpfs mounts seen through the apps-service
 * double (several nodes in one process cannot share one dockerd: their containers would have one name).
 *
 * - `rapp` (`r:/data`) on A and B: a file written on either appears on the other.
 * - `gapp` (`g:/data`) on A, B and C: one primary runs (A: all empty, lowest key), B and C hold
 *   receive-only copies with the container stopped; B's volume is unmounted (its folder paused, nothing it
 *   holds is sent: A's and C's files stay); A stops; C, mounted and holding the data, is elected and starts.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ok } from '../support/envelope.ts';
import { apiPort, mountVolume, startFsNode, tmp, unmount, unmountUnder, until, type FsNode } from './support.ts';

const KEYS = ['node-a', 'node-b', 'node-c'];
const N = [3, 4, 5];
const loc = (i: number) => ({ ip: `127.0.0.1:${apiPort(N[i])}`, node: KEYS[i] });
const LOCATIONS = { rapp: [loc(0), loc(1)], gapp: [loc(0), loc(1), loc(2)] };
const RAPP = { name: 'rapp', components: [{ name: 'web', containerData: 'r:/data' }] };
const GAPP = { name: 'gapp', components: [{ name: 'db', containerData: 'g:/data|m:logs:/logs' }] };

describe('filesync: r: and g: app data across three nodes', function () {
  this.timeout(180_000);
  const roots = [tmp('apps-a'), tmp('apps-b'), tmp('apps-c')];
  const nodes: (FsNode | null)[] = [];
  const dataDirs: string[] = [];
  const appdata = (i: number, container: string) => path.join(roots[i], container, 'appdata');
  const state = async (i: number) => ok(await nodes[i]!.get('/appsdouble/state'));
  const promoted = async (i: number, app: string) => ok(await nodes[i]!.post('/apps/promotedfolders', { appname: app }));
  const has = (i: number, container: string, file: string, content: string) => {
    try {
      return fs.readFileSync(path.join(appdata(i, container), file), 'utf8') === content;
    } catch {
      return false;
    }
  };

  before(async () => {
    for (let i = 0; i < 3; i++) {
      if (i < 2) mountVolume(path.join(roots[i], 'coreweb_rapp'));
      mountVolume(path.join(roots[i], 'coredb_gapp'));
    }
    const apps = [[RAPP, GAPP], [RAPP, GAPP], [GAPP]];
    for (let i = 0; i < 3; i++) {
      nodes.push(await startFsNode({ n: N[i], login: false, peers: { nodeKey: KEYS[i], locations: LOCATIONS }, apps: { root: roots[i], apps: apps[i] } }));
      dataDirs.push(nodes[i]!.dataDir);
    }
  });
  after(async () => {
    for (const n of nodes) await n?.close();
    for (const r of roots) unmountUnder(r);
    for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
    for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
  });

  it('r: a file written into the volume on one node appears on the other, both ways', async () => {
    fs.writeFileSync(path.join(appdata(0, 'coreweb_rapp'), 'from-a.txt'), 'written on A');
    await until('from-a.txt on B', () => has(1, 'coreweb_rapp', 'from-a.txt', 'written on A'), 90_000);
    // B acquired the data, so its folder sends too.
    await until('B send-receive', async () => (await promoted(1, 'rapp'))[0]?.type === 'sendreceive', 60_000);
    fs.writeFileSync(path.join(appdata(1, 'coreweb_rapp'), 'from-b.txt'), 'written on B');
    await until('from-b.txt on A', () => has(0, 'coreweb_rapp', 'from-b.txt', 'written on B'), 60_000);
    const [a] = await promoted(0, 'rapp');
    assert.equal(a.mode, 'r');
    assert.equal(a.role, 'replica');
    assert.equal(a.mounted, true);
    assert.equal(a.acquired, true);
  });

  it('g: one primary runs, the others hold receive-only copies with the container stopped', async () => {
    await until('A primary, B and C standby', async () => {
      const s = await Promise.all([0, 1, 2].map(state));
      return s[0].coredb_gapp === 'running' && s[1].coredb_gapp === 'stopped' && s[2].coredb_gapp === 'stopped';
    }, 60_000);
    fs.writeFileSync(path.join(appdata(0, 'coredb_gapp'), 'db.bin'), 'rows 1-100');
    await until('the copy on B and C', () => has(1, 'coredb_gapp', 'db.bin', 'rows 1-100') && has(2, 'coredb_gapp', 'db.bin', 'rows 1-100'), 90_000);
    const [a] = await promoted(0, 'gapp');
    const [b] = await promoted(1, 'gapp');
    assert.deepEqual([a.role, a.type], ['primary', 'sendreceive']);
    assert.deepEqual([b.role, b.type], ['standby', 'receiveonly']);
    // The primary's container stays running; its copy is never overwritten by a standby.
    assert.equal((await state(0)).coredb_gapp, 'running');
  });

  it('a standby whose volume is unmounted pauses its folder and never sends its empty folder', async () => {
    unmount(path.join(roots[1], 'coredb_gapp'));
    await until('B paused, not mounted', async () => {
      const [b] = await promoted(1, 'gapp');
      return b.mounted === false && b.state === 'paused';
    }, 30_000);
    fs.writeFileSync(path.join(appdata(0, 'coredb_gapp'), 'db2.bin'), 'rows 101-200');
    await until('db2.bin on C', () => has(2, 'coredb_gapp', 'db2.bin', 'rows 101-200'), 60_000);
    for (const i of [0, 2]) assert.ok(has(i, 'coredb_gapp', 'db.bin', 'rows 1-100'), `db.bin still on node ${i}`);
    assert.deepEqual(fs.readdirSync(path.join(roots[1], 'coredb_gapp')), [], 'nothing was made under the unmounted volume');
  });

  it('g: when the primary node stops, the mounted node holding the data (C, not the unmounted B) is elected and starts', async () => {
    await until('C acquired the copy', async () => (await promoted(2, 'gapp'))[0].acquired === true, 60_000);
    await nodes[0]!.close();
    nodes[0] = null;
    await until('C primary and running', async () => (await state(2)).coredb_gapp === 'running', 60_000);
    const [c] = await promoted(2, 'gapp');
    assert.deepEqual([c.role, c.type, c.mounted], ['primary', 'sendreceive', true]);
    assert.ok(has(2, 'coredb_gapp', 'db.bin', 'rows 1-100') && has(2, 'coredb_gapp', 'db2.bin', 'rows 101-200'), 'C started with the data');
    assert.equal((await state(1)).coredb_gapp, 'stopped', 'B, unmounted, stays stopped');
    // A's own copy is untouched by the failover.
    assert.ok(has(0, 'coredb_gapp', 'db.bin', 'rows 1-100'));
  });

  it('g: the old primary back is a standby: its container stopped, it receives what the new primary wrote', async () => {
    fs.writeFileSync(path.join(appdata(2, 'coredb_gapp'), 'db3.bin'), 'rows 201-300 on C');
    nodes[0] = await startFsNode({ n: N[0], dataDir: dataDirs[0], login: false, peers: { nodeKey: KEYS[0], locations: LOCATIONS }, apps: { root: roots[0], apps: [RAPP, GAPP] } });
    await until('A standby with the new data', async () => (await state(0)).coredb_gapp === 'stopped' && has(0, 'coredb_gapp', 'db3.bin', 'rows 201-300 on C'), 60_000);
    const [a] = await promoted(0, 'gapp');
    assert.deepEqual([a.role, a.type], ['standby', 'receiveonly']);
    assert.equal((await state(2)).coredb_gapp, 'running', 'C still the one running');
    assert.ok(has(2, 'coredb_gapp', 'db.bin', 'rows 1-100'), 'nothing of C was lost');
  });

  it('POST /apps/promotedfolders: public; every synced folder of the app, or of all apps; bad names refused', async () => {
    const all = await promoted(2, undefined as any);
    assert.deepEqual(all.map((f: any) => f.folder), ['coredb_gapp']);
    assert.deepEqual(await promoted(2, 'nosuchapp'), []);
    const bad = await nodes[2]!.post('/apps/promotedfolders', { appname: '../x' });
    assert.equal(bad.json.status, 'error');
    assert.match(bad.json.data.message, /appname/);
    assert.match(bad.text, /"code":400/);
  });
});
