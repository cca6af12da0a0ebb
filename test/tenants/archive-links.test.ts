/**
 * Archives whose links each look inside on their own, through the shipped node process: a chain
 * `s0 -> .`, `sN -> s(N-1)/..` resolves to `/` on the host once extracted; a link judged before a later entry
 * made its missing name exist, or replaced the link it went through. B extracts them into its own volume
 * (`extractobject`) and restores them as an uploaded backup; the test reads the host's disk afterwards: no
 * entry of B's volume resolves outside it, and B's old data still serves.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { TestDocker } from '../support/docker.ts';
import type { Regtest } from '../support/litecoind.ts';
import { eventually } from '../support/wait.ts';
import { IDLE, component, data, last, ndjson, v8Spec } from '../apps/support.ts';
import { tgz, type Entry } from '../volumes/archives.ts';
import { freeTenantPort, registerAndPay, removeFromDocker, runOperation, said, paidWorld, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

/** `s0 -> .`, then `sK -> s(K-1)/..`: each alone resolves to the folder it sits in. */
const chain = (n: number, prefix = ''): Entry[] => [
  { name: `${prefix}s0`, type: 'symlink', linkname: '.' },
  ...Array.from({ length: n }, (_, k) => ({ name: `${prefix}s${k + 1}`, type: 'symlink' as const, linkname: `s${k}/..` })),
];

describe('tenants: archives with link chains (extract, restore of an upload)', function () {
  this.timeout(600_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;
  let registryAddress: string;
  let volume: string;
  let appdata: string;

  /** Start an operation as B and wait for its end. */
  async function op(route: string, body: Record<string, unknown>): Promise<any> {
    const { started, done } = await runOperation(node, node.headers.b, route, body);
    assert.equal(started.status, 202, said(started));
    return done;
  }

  async function upload(archive: Buffer) {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(archive)]), 'backup.tar.gz');
    return node.request('POST', '/ioutils/fileupload/backup/arcb/web', { body: form, headers: node.headers.b });
  }

  /** Every entry under `dir` whose real path (links followed, as any process on the host would) leaves `inside`. */
  function escapes(dir: string, inside: string): string[] {
    const out: string[] = [];
    const walk = (d: string) => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const p = path.join(d, e.name);
        let real: string;
        try {
          real = fs.realpathSync(p);
        } catch {
          continue; // dangling or a loop: resolves nowhere
        }
        if (real !== inside && !real.startsWith(`${inside}/`)) out.push(`${path.relative(inside, p)} -> ${real}`);
        else if (e.isDirectory()) walk(p);
      }
    };
    walk(dir);
    return out;
  }

  before(async () => {
    ({ docker, ltc, registryAddress } = await paidWorld());
    node = await startTenantNode({ docker, ltc, registryAddress, wallets: w });
    for (const [owner, name] of [['a', 'arca'], ['b', 'arcb']] as const) {
      const spec = v8Spec(w[owner].legacyid, name, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]);
      await registerAndPay(node, ltc, registryAddress, owner, w, spec);
      const lines = ndjson(await node.get(`/apps/installapplocally/${name}`, node.headers.admin));
      assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    }
    volume = path.join(node.dataDir, 'apps', 'mounts', 'coreweb_arcb');
    appdata = path.join(volume, 'appdata');
    fs.writeFileSync(path.join(appdata, 'keep.txt'), 'old data of b');
  });
  after(async () => {
    if (docker) await removeFromDocker(docker, ['arca', 'arcb']);
    await node?.stop();
    await ltc?.stop();
  });

  // Deep enough to climb from the staging folder of a restore to `/` (the data folder sits under /tmp).
  const depth = () => volume.split('/').length + 4;
  const hostile = (): { why: string; entries: Entry[] }[] => [
    { why: 'a chain sN -> s(N-1)/.. to /', entries: [...chain(depth()), { name: 'note.txt', body: 'x' }] },
    { why: 'a chain inside a folder', entries: [{ name: 'd/', type: 'directory' }, ...chain(depth(), 'd/')] },
    // Judged before the name it goes through existed: `a -> b/..` is `.` by its names; then `b -> .`.
    { why: 'a link through a name made later', entries: [{ name: 'a', type: 'symlink', linkname: 'b/..' }, { name: 'b', type: 'symlink', linkname: '.' }] },
    // Judged while `x` was a folder's link; a later entry replaces `x`.
    {
      why: 'a link through a link replaced later',
      entries: [{ name: 'sub/', type: 'directory' }, { name: 'x', type: 'symlink', linkname: 'sub' }, { name: 'y', type: 'symlink', linkname: 'x/..' }, { name: 'x', type: 'symlink', linkname: '.' }],
    },
  ];

  it('extractobject refuses each archive whole; nothing of it lands, nothing in the volume resolves outside it', async () => {
    for (const h of hostile()) {
      fs.writeFileSync(path.join(appdata, 'h.tar.gz'), await tgz(h.entries));
      const x = await op('/apps/extractobject', { appname: 'arcb', component: 'web', source: 'appdata/h.tar.gz', target: 'appdata/ex' });
      assert.equal(x.status, 'Failed', `${h.why}: ${JSON.stringify(x)}`);
      assert.equal(x.error.status, 422, `${h.why}: ${JSON.stringify(x.error)}`);
      assert.equal(x.error.title, 'ArchiveRefused', h.why);
      assert.match(x.error.detail, /resolves above the target|links must resolve inside the target/, h.why);
      const ex = path.join(appdata, 'ex');
      assert.ok(!fs.existsSync(ex) || fs.readdirSync(ex).length === 0, `${h.why}: ${fs.existsSync(ex) ? fs.readdirSync(ex).join() : ''}`);
      assert.deepEqual(escapes(volume, volume), [], h.why);
      fs.rmSync(ex, { recursive: true, force: true });
    }
    fs.rmSync(path.join(appdata, 'h.tar.gz'));
    assert.deepEqual(fs.readdirSync(path.join(volume, '.corenode-staging')), []);
  });

  it('a restore of an uploaded archive refuses each; the old data keeps serving', async () => {
    for (const h of hostile()) {
      data(await upload(await tgz(h.entries)));
      const r = await op('/apps/appendrestoretask', { appname: 'arcb', type: 'upload', restore: [{ component: 'web', restore: true }] });
      assert.equal(r.status, 'Failed', `${h.why}: ${JSON.stringify(r)}`);
      assert.equal(r.error.title, 'ArchiveRefused', `${h.why}: ${JSON.stringify(r.error)}`);
      assert.equal(fs.readFileSync(path.join(appdata, 'keep.txt'), 'utf8'), 'old data of b', h.why);
      assert.deepEqual(escapes(volume, volume), [], h.why);
    }
    await eventually(async () => (await docker.inspect('coreweb_arcb')).State.Running === true, { what: 'B running', timeoutMs: 60_000, everyMs: 200 });
    assert.deepEqual((await docker.cli(['exec', 'coreweb_arcb', 'ls', '/data'])).split('\n').filter(Boolean), ['keep.txt']);
  });

  it('links that climb but stay inside (node_modules/.bin style) are extracted and restored', async () => {
    const entries: Entry[] = [
      { name: 'keep.txt', body: 'restored' },
      { name: 'pkg/', type: 'directory' },
      { name: 'pkg/bin/', type: 'directory' },
      { name: 'pkg/bin/run.js', body: 'run' },
      { name: 'node_modules/', type: 'directory' },
      { name: 'node_modules/.bin/', type: 'directory' },
      { name: 'node_modules/.bin/run', type: 'symlink', linkname: '../../pkg/bin/run.js' },
      { name: 'self', type: 'symlink', linkname: '.' },
      { name: 'later', type: 'symlink', linkname: 'made-later/x' },
      { name: 'made-later/', type: 'directory' },
    ];
    data(await upload(await tgz(entries)));
    const r = await op('/apps/appendrestoretask', { appname: 'arcb', type: 'upload', restore: [{ component: 'web', restore: true }] });
    assert.equal(r.status, 'Succeeded', JSON.stringify(r));
    assert.equal(fs.readFileSync(path.join(appdata, 'node_modules/.bin/run'), 'utf8'), 'run');
    assert.equal(fs.readFileSync(path.join(appdata, 'keep.txt'), 'utf8'), 'restored');
    assert.deepEqual(escapes(volume, volume), []);
  });
});
