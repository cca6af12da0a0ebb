/**
 * App data that follows the app, with three nodes, each supervising its own real Syncthing on loopback
 * (own home, GUI/API port, listen address; discovery and relays off) and running the real peers plugin on
 * its own address (127.0.0.11-13), seeded with A: where apps run comes from the nodes' real running
 * notices. The apps service is the TEST DOUBLE of fixture/ (apps from config, volumes real tmpfs mounts,
 * stop/start a desired state): several nodes on one dockerd would give their containers the same name
 * (`core<component>_<app>`, which is also the folder id every node must agree on); the real apps plugin's
 * service is exercised by real-apps.test.ts.
 *
 * - A starts alone: after its listening window it is the origin of `rapp` and the primary of `gapp`; B and
 *   C join the mesh and learn both from A's notices.
 * - `rapp` (`r:/data`) on A and B: a file written on either appears on the other.
 * - `gapp` (`g:/data`) on A, B and C: A runs, B and C hold receive-only copies with the container stopped;
 *   B's volume is unmounted (its folder paused, nothing it holds is sent: A's and C's files stay); A stops;
 *   C, mounted and holding the data, is elected and starts; A back is a standby.
 * - `gapp` removed on C: A and B take C out of the folder and remove its device (they share no other app
 *   with it); C removes theirs.
 * Each transition is also asserted on the node's event bus (`filesync.*`).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ok } from '../support/envelope.ts';
import { apiKeyOf, apiPort, eventsOf, guiPort, mountVolume, startFsNode, tmp, unmount, unmountUnder, until, type FsNode } from './support.ts';

const N = [3, 4, 5];
const IPS = ['127.0.0.11', '127.0.0.12', '127.0.0.13'];
const RAPP = { name: 'rapp', components: [{ name: 'web', containerData: 'r:/data' }] };
const GAPP = { name: 'gapp', components: [{ name: 'db', containerData: 'g:/data|m:logs:/logs' }] };
// The primary is not heard from for this long: replaced (the follower's round is 300 ms).
const FOLLOW = { follow: { intervalMs: 300, primaryTimeoutMs: 2000 } };

describe('filesync: r: and g: app data across three nodes of a real peer mesh', function () {
  this.timeout(180_000);
  const roots = [tmp('apps-a'), tmp('apps-b'), tmp('apps-c')];
  const apps = [[RAPP, GAPP], [RAPP, GAPP], [GAPP]];
  const nodes: (FsNode | null)[] = [];
  const dataDirs: string[] = [];
  const appdata = (i: number, container: string) => path.join(roots[i], container, 'appdata');
  const state = async (i: number) => ok(await nodes[i]!.get('/appsdouble/state'));
  const promoted = async (i: number, app: string) => ok(await nodes[i]!.post('/apps/promotedfolders', { appname: app }));
  const events = async (i: number, name: string) => (await eventsOf(nodes[i]!)).filter((e) => e.name === name).map((e) => e.data);
  const devices = async (i: number) => {
    const res = await fetch(`http://127.0.0.1:${guiPort(N[i])}/rest/config/devices`, { headers: { 'X-API-Key': apiKeyOf(nodes[i]!.home) } });
    return ((await res.json()) as { deviceID: string }[]).map((d) => d.deviceID);
  };
  const has = (i: number, container: string, file: string, content: string) => {
    try {
      return fs.readFileSync(path.join(appdata(i, container), file), 'utf8') === content;
    } catch {
      return false;
    }
  };
  const start = (i: number, dataDir?: string) =>
    startFsNode({ n: N[i], ip: IPS[i], dataDir, login: false, seeds: i ? [`${IPS[0]}:${apiPort(N[0])}`] : [], filesync: FOLLOW, apps: { root: roots[i], apps: apps[i] } });

  before(async () => {
    for (let i = 0; i < 3; i++) {
      if (i < 2) mountVolume(path.join(roots[i], 'coreweb_rapp'));
      mountVolume(path.join(roots[i], 'coredb_gapp'));
    }
    nodes.push(await start(0));
    // Alone once its listening window is over (no peer answered): the origin and the primary.
    await until('A primary of gapp', async () => (await promoted(0, 'gapp'))[0]?.role === 'primary', 60_000);
    nodes.push(...(await Promise.all([start(1), start(2)])));
    for (const n of nodes) dataDirs.push(n!.dataDir);
  });
  after(async () => {
    for (const n of nodes) await n?.close();
    for (const r of roots) unmountUnder(r);
    for (const d of dataDirs) fs.rmSync(d, { recursive: true, force: true });
    for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
  });

  it('the nodes form a mesh from one seed; each learns where the apps run from the running notices', async () => {
    await until('every node knows gapp on 3 nodes and rapp on 2', async () => {
      for (const n of nodes) {
        const g = ok(await n!.get('/apps/location/gapp')) as { ip: string }[];
        const r = ok(await n!.get('/apps/location/rapp')) as { ip: string }[];
        if (g.length !== 3 || r.length !== 2) return false;
      }
      return true;
    }, 30_000);
    const g = ok(await nodes[1]!.get('/apps/location/gapp')) as { ip: string }[];
    assert.deepEqual(g.map((l) => l.ip).sort(), IPS.map((ip, i) => `${ip}:${apiPort(N[i])}`));
  });

  it('r: a file written into the volume on one node appears on the other, both ways', async () => {
    fs.writeFileSync(path.join(appdata(0, 'coreweb_rapp'), 'from-a.txt'), 'written on A');
    await until('from-a.txt on B', () => has(1, 'coreweb_rapp', 'from-a.txt', 'written on A'), 90_000);
    // B acquired the data, so its folder sends too.
    await until('B send-receive', async () => (await promoted(1, 'rapp'))[0]?.type === 'sendreceive', 60_000);
    fs.writeFileSync(path.join(appdata(1, 'coreweb_rapp'), 'from-b.txt'), 'written on B');
    await until('from-b.txt on A', () => has(0, 'coreweb_rapp', 'from-b.txt', 'written on B'), 60_000);
    const [a] = await promoted(0, 'rapp');
    assert.deepEqual([a.mode, a.role, a.mounted, a.acquired], ['r', 'replica', true, true]);
    // On B's bus: shared with A (receive-only first), then promoted to send-receive once acquired.
    const shared = await events(1, 'filesync.shared');
    assert.ok(shared.some((e) => e.folder === 'coreweb_rapp' && e.devices.length === 1 && e.type === 'receiveonly'), JSON.stringify(shared));
    assert.deepEqual((await events(1, 'filesync.promoted')).filter((e) => e.folder === 'coreweb_rapp'), [{ app: 'rapp', folder: 'coreweb_rapp', type: 'sendreceive' }]);
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
    // A was elected once (alone); the standbys never were.
    assert.equal((await events(0, 'filesync.elected')).length, 1);
    assert.deepEqual(await events(2, 'filesync.elected'), []);
  });

  it('a standby whose volume is unmounted pauses its folder and never sends its empty folder', async () => {
    unmount(path.join(roots[1], 'coredb_gapp'));
    await until('B paused, not mounted', async () => {
      const [b] = await promoted(1, 'gapp');
      return b.mounted === false && b.state === 'paused';
    }, 30_000);
    // Sent once the pause is applied: it may follow the paused state by a moment.
    await until('filesync.paused on B', async () => (await events(1, 'filesync.paused')).length > 0, 30_000);
    assert.deepEqual(await events(1, 'filesync.paused'), [{ app: 'gapp', folder: 'coredb_gapp', reason: 'volume not mounted' }]);
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
    const [elected] = await events(2, 'filesync.elected');
    assert.deepEqual([elected.folder, elected.items], ['coredb_gapp', 2]);
    assert.deepEqual(await events(1, 'filesync.elected'), []);
    // A's own copy is untouched by the failover.
    assert.ok(has(0, 'coredb_gapp', 'db.bin', 'rows 1-100'));
  });

  it('g: the old primary back is a standby: its container stopped, it receives what the new primary wrote', async () => {
    fs.writeFileSync(path.join(appdata(2, 'coredb_gapp'), 'db3.bin'), 'rows 201-300 on C');
    nodes[0] = await start(0, dataDirs[0]);
    await until('A standby with the new data', async () => (await state(0)).coredb_gapp === 'stopped' && has(0, 'coredb_gapp', 'db3.bin', 'rows 201-300 on C'), 60_000);
    const [a] = await promoted(0, 'gapp');
    assert.deepEqual([a.role, a.type], ['standby', 'receiveonly']);
    assert.equal((await state(2)).coredb_gapp, 'running', 'C still the one running');
    assert.ok(has(2, 'coredb_gapp', 'db.bin', 'rows 1-100'), 'nothing of C was lost');
    assert.deepEqual(await events(0, 'filesync.elected'), [], 'A back was never elected');
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

  it('an app removed from C: its folder leaves C; A and B, sharing no other app with C, remove its device; C removes theirs', async () => {
    const ids = await Promise.all([0, 1, 2].map(async (i) => ok(await nodes[i]!.get('/filesync/deviceid')) as string));
    for (const i of [0, 1]) assert.ok((await devices(i)).includes(ids[2]), `node ${i} has C's device`);
    ok(await nodes[2]!.post('/appsdouble/remove/gapp', {}));
    await until("C's device gone from A and B", async () => !(await devices(0)).includes(ids[2]) && !(await devices(1)).includes(ids[2]), 30_000);
    await until("A's and B's devices gone from C", async () => (await devices(2)).every((d) => d === ids[2]), 30_000);
    assert.deepEqual(await events(2, 'filesync.removed'), [{ app: 'gapp', folder: 'coredb_gapp' }]);
    for (const i of [0, 1]) assert.deepEqual((await events(i, 'filesync.deviceremoved')).map((e) => e.device), [ids[2]]);
    assert.deepEqual((await events(2, 'filesync.deviceremoved')).map((e) => e.device).sort(), [ids[0], ids[1]].sort());
    // A's folder lost C (`unshared`); B's paused folder lost it with the device (Syncthing drops a removed
    // device from its folders).
    assert.deepEqual((await events(0, 'filesync.unshared')).filter((e) => e.folder === 'coredb_gapp').map((e) => e.devices), [[ids[2]]]);
    const bFolder = await (await fetch(`http://127.0.0.1:${guiPort(N[1])}/rest/config/folders/coredb_gapp`, { headers: { 'X-API-Key': apiKeyOf(nodes[1]!.home) } })).json();
    assert.deepEqual(bFolder.devices.map((d: { deviceID: string }) => d.deviceID).sort(), [ids[0], ids[1]].sort());
    // A and B still share rapp and gapp with each other.
    assert.ok((await devices(0)).includes(ids[1]) && (await devices(1)).includes(ids[0]));
  });
});
