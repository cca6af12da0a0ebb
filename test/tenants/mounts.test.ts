/**
 * Attacks on what the node binds into a tenant's containers, through the shipped node process and the real
 * dockerd. A (the victim) and B (the attacker) each run an app; B tries to get a host folder bound into its
 * own container: by the host names of `containerData` (`m:..`, `f:..`, `m:.`, `c:0:..`), by a link swapped
 * into the place of `appdata` or of an `m:` folder with the volume file operations, by a link already in
 * place before a start, and by specifications stored before the rules. Each test then reads what Docker
 * mounted (`docker inspect`), what the host's disk holds and what B's container sees.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { TestDocker } from '../support/docker.ts';
import type { Regtest } from '../support/litecoind.ts';
import type { Answer } from '../support/node.ts';
import { IDLE, component, data, error, last, ndjson, signedMessage, until, v8Spec } from '../apps/support.ts';
import { freeTenantPort, registerAndPay, removeFromDocker, runOperation, said, paidWorld, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

describe('tenants: mounts (containerData host names, links in place of mount sources)', function () {
  this.timeout(600_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;
  let registryAddress: string;
  let mounts: string;
  const mountOf = (container: string) => path.join(mounts, container);

  const APPS = ['mnta', 'mntb', 'mntc', 'mntd'];
  /** Every bind source of every container of this file's apps: inside its own volume, one name deep, never a link. */
  async function assertConfined(what: string) {
    const names: string[] = [];
    for (const app of APPS) names.push(...(await docker.cli(['ps', '-a', '--filter', `label=corenode.app=${app}`, '--format', '{{.Names}}'])).split('\n').filter(Boolean));
    for (const n of names) {
      const info = await docker.inspect(n);
      for (const m of info.Mounts ?? []) {
        if (m.Type !== 'bind') continue;
        const rel = path.relative(mounts, m.Source).split(path.sep);
        assert.ok(rel.length === 2 && !rel.includes('..') && rel[0] === n, `${what}: ${n} has ${m.Source} bound at ${m.Destination}`);
        assert.ok(!fs.lstatSync(m.Source).isSymbolicLink(), `${what}: ${n}'s bind source ${m.Source} is a link`);
      }
      for (const b of info.HostConfig?.Binds ?? []) assert.ok(!b.startsWith(`${mounts}:`) && !b.startsWith(`${path.dirname(mounts)}:`), `${what}: ${n} was created with ${b}`);
    }
  }

  const install = async (owner: 'a' | 'b', name: string, containerData = '/data') => {
    const spec = v8Spec(w[owner].legacyid, name, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE, containerData })]);
    await registerAndPay(node, ltc, registryAddress, owner, w, spec);
    const lines = ndjson(await node.get(`/apps/installapplocally/${name}`, node.headers.admin));
    assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    return spec;
  };

  /** Start an operation as B and wait for its end. */
  async function op(route: string, body: Record<string, unknown>): Promise<any> {
    const { started, done } = await runOperation(node, node.headers.b, route, body);
    assert.equal(started.status, 202, said(started));
    return done;
  }

  const bSees = async () => (await docker.cli(['exec', 'coreweb_mntb', 'ls', '-a', '/data'])).split('\n').filter(Boolean);

  before(async () => {
    ({ docker, ltc, registryAddress } = await paidWorld());
    node = await startTenantNode({ docker, ltc, registryAddress, wallets: w });
    mounts = path.join(node.dataDir, 'apps', 'mounts');
    await install('a', 'mnta');
    await install('b', 'mntb', '/data|m:extra:/extra');
    await docker.cli(['exec', 'coreweb_mnta', 'sh', '-c', 'echo secret-of-a > /data/a.txt']);
    // B's own code makes links to host paths inside its data (allowed: they are its own entries).
    await docker.cli(['exec', 'coreweb_mntb', 'sh', '-c', `ln -s ${path.join(node.dataDir, 'apps')} /data/lnk && ln -s ${mounts} /data/all && echo b > /data/b.txt`]);
  });
  after(async () => {
    if (docker) await removeFromDocker(docker, APPS);
    await node?.stop();
    await ltc?.stop();
  });

  it('containerData host names that leave the volume are refused at registration, update and verification, naming the field', async () => {
    const port = await freeTenantPort();
    const cases: { data: string[]; field: string; part: string }[] = [
      { data: ['/data|m:..:/escape'], field: 'compose[0].containerData', part: 'm:..:/escape' },
      { data: ['/data|f:..:/escape'], field: 'compose[0].containerData', part: 'f:..:/escape' },
      { data: ['/data|m:.:/vol'], field: 'compose[0].containerData', part: 'm:.:/vol' },
      { data: ['/data', '/data|c:0:..:/escape'], field: 'compose[1].containerData', part: 'c:0:..:/escape' },
      { data: ['/data', '/data|cf:0:..:/escape'], field: 'compose[1].containerData', part: 'cf:0:..:/escape' },
      { data: ['/data|m::/empty'], field: 'compose[0].containerData', part: 'm::/empty' },
      { data: ['/data|m:.corenode-staging:/stage'], field: 'compose[0].containerData', part: 'm:.corenode-staging:/stage' },
      { data: ['/data|m:a\u0000b:/nul'], field: 'compose[0].containerData', part: 'm:a' },
    ];
    for (const c of cases) {
      const spec = v8Spec(w.b.legacyid, 'escapeb', c.data.map((d, k) => component(`c${k}`, docker.images.busybox, port + k, 8080 + k, { commands: IDLE, containerData: d })));
      for (const [route, body] of [
        ['/apps/appregister', await signedMessage(w.b, spec)],
        ['/apps/verifyappregistrationspecifications', spec],
        ['/apps/calculateprice', spec],
      ] as const) {
        const e = error(await node.post(route, body, node.headers.b));
        assert.equal(e.code, 400, `${route} ${c.part}: ${JSON.stringify(e)}`);
        assert.equal(e.name, 'ValidationError');
        assert.ok(e.message.includes(c.field) && e.message.includes(c.part), `${route}: ${e.message}`);
      }
      const update = { ...v8Spec(w.b.legacyid, 'mntb', [component('web', docker.images.busybox, port, 8080, { commands: IDLE, containerData: c.data[c.data.length - 1].replace('c:0:', 'm:').replace('cf:0:', 'f:') })]) };
      const e = error(await node.post('/apps/appupdate', await signedMessage(w.b, update, 'coreappupdate'), node.headers.b));
      assert.equal(e.code, 400, JSON.stringify(e));
      assert.match(e.message, /compose\[0\]\.containerData/);
    }
    assert.equal((await node.get('/apps/appspecifications/escapeb')).json.data.code, 404);
    await assertConfined('after the refused registrations');
    assert.deepEqual((await bSees()).sort(), ['.', '..', 'all', 'b.txt', 'lnk']);
  });

  it('the volume file operations refuse to move, rename, remove or replace appdata and the m: folders', async () => {
    const t = { appname: 'mntb', component: 'web' };
    const g = (p: string) => node.get(p, node.headers.b);
    const refusals: [string, Answer | Promise<Answer>][] = [
      ['rename appdata', g('/apps/renameobject/mntb/web/appdata/old')],
      ['rename to appdata', g('/apps/renameobject/mntb/web/backupx/appdata')],
      ['remove appdata', g('/apps/removeobject/mntb/web/appdata')],
      ['remove extra', g('/apps/removeobject/mntb/web/extra')],
      ['rename extra', g('/apps/renameobject/mntb/web/extra/extra2')],
    ];
    for (const [why, answer] of refusals) {
      const e = error(await answer);
      assert.equal(e.code, 400, `${why}: ${JSON.stringify(e)}`);
      assert.equal(e.name, 'PathRefused', why);
      assert.match(e.message, /is mounted into the app's containers/, why);
    }
    for (const [why, route, body] of [
      ['move appdata away', '/apps/moveobject', { ...t, source: 'appdata', target: 'old' }],
      ['move a link into extra', '/apps/moveobject', { ...t, source: 'appdata/lnk', target: 'extra' }],
      ['copy a link into extra', '/apps/copyobject', { ...t, source: 'appdata/lnk', target: 'extra' }],
    ] as const) {
      const x = await op(route, body);
      assert.equal(x.status, 'Failed', `${why}: ${JSON.stringify(x)}`);
      assert.equal(x.error.title, 'PathRefused', why);
      assert.match(x.error.detail, /is mounted into the app's containers/, why);
    }
    // The host's disk: both mount roots are the folders they were, no link anywhere in their place.
    for (const n of ['appdata', 'extra']) assert.ok(fs.lstatSync(path.join(mountOf('coreweb_mntb'), n)).isDirectory(), n);
    // A restart mounts B's own data, nothing of the host or of A.
    data(await g('/apps/apprestart/mntb'));
    await until('B running again', async () => (await docker.inspect('coreweb_mntb')).State.Running);
    const seen = await bSees();
    assert.ok(seen.includes('b.txt') && !seen.includes('secret.key') && !seen.includes('coreweb_mnta'), seen.join());
    assert.equal((await docker.cli(['exec', 'coreweb_mntb', 'ls', '/extra'])).trim(), '');
    await assertConfined('after the file operations');
  });

  it('a link already in place of a mount source refuses every start, restart, redeploy and recreation; it is reported, not repaired', async () => {
    const root = mountOf('coreweb_mntb');
    // As if it had got there before the rules (an upgraded node): appdata is a link to the node's apps folder.
    fs.renameSync(path.join(root, 'appdata'), path.join(root, 'appdata-before'));
    fs.symlinkSync(path.join(node.dataDir, 'apps'), path.join(root, 'appdata'));
    const refusedStart = (e: { code: number | string; name: string; message: string }, why: string) => {
      assert.equal(e.code, 409, `${why}: ${JSON.stringify(e)}`);
      assert.equal(e.name, 'MountRefused', why);
      assert.ok(e.message.includes(path.join(root, 'appdata')) && /symbolic link/.test(e.message), `${why}: ${e.message}`);
    };
    refusedStart(error(await node.get('/apps/apprestart/mntb', node.headers.b)), 'apprestart');
    data(await node.get('/apps/appstop/mntb', node.headers.b));
    refusedStart(error(await node.get('/apps/appstart/mntb', node.headers.b)), 'appstart');
    assert.equal((await docker.inspect('coreweb_mntb')).State.Running, false);
    // A redeploy removes the container and makes it again: the create is refused, nothing mounts the link.
    const lines = ndjson(await node.get('/apps/redeploy/mntb', node.headers.b));
    assert.equal(last(lines).status, 'error', JSON.stringify(last(lines)));
    assert.match(last(lines).message, /MountRefused|is a symbolic link/);
    // The reconciler (desired running) keeps trying to make it again, and is refused each time.
    await until('the refusal recorded as tampering', async () =>
      data(await node.get('/apps/tamperingevents/mntb')).some((ev: any) => ev.kind === 'mount_refused' && ev.detail.includes('symbolic link')),
    );
    // (A round skipped while the redeploy held the install slot puts the next try on the ladder's 30 s rung.)
    await until('a recreation refused by the reconciler', async () => /starting a component failed[^\n]*symbolic link|symbolic link[^\n]*starting a component failed/.test(node.output()), 90_000);
    const exists = await docker.inspect('coreweb_mntb').then(() => true, () => false);
    if (exists) assert.equal((await docker.inspect('coreweb_mntb')).State.Running, false);
    await assertConfined('after the refused starts');
    // Not repaired into the link, not replaced: the owner's link is where the owner put it.
    assert.ok(fs.lstatSync(path.join(root, 'appdata')).isSymbolicLink());
    assert.equal(fs.readFileSync(path.join(mountOf('coreweb_mnta'), 'appdata', 'a.txt'), 'utf8'), 'secret-of-a\n');
    // A start through the owner's running neighbour never happened either: A's container sees only A's data.
    assert.deepEqual((await docker.cli(['exec', 'coreweb_mnta', 'ls', '/data'])).split('\n').filter(Boolean), ['a.txt']);
  });

  it('specifications stored before the rules (installed, global, temporary) never mount outside the volume', async () => {
    await install('b', 'mntc');
    const bad = '/data|m:..:/escape';
    await node.stop({ keepData: true });
    // The stores as a node before the rules could have kept them (nedb: the last line of an _id wins).
    const rewrite = (file: string, name: string) => {
      const f = path.join(node.dataDir, 'apps', file);
      const docs = fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((d) => (d.name ?? d.appSpecification?.name) === name);
      const doc = docs[docs.length - 1];
      doc.appSpecification.compose[0].containerData = bad;
      fs.appendFileSync(f, `${JSON.stringify(doc)}\n`);
    };
    rewrite('installed.db', 'mntc');
    rewrite('specs.db', 'mntc');
    const spec = v8Spec(w.b.legacyid, 'mntd', [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE, containerData: bad })]);
    const temp = { ...(await signedMessage(w.b, spec)), hash: crypto.randomBytes(32).toString('hex'), signer: w.b.legacyid, receivedAt: Date.now(), expireAt: Date.now() + 3600_000, _id: crypto.randomBytes(8).toString('hex') };
    fs.appendFileSync(path.join(node.dataDir, 'apps', 'temporary.db'), `${JSON.stringify(temp)}\n`);
    node = await startTenantNode({ docker, ltc, registryAddress, wallets: w, dataDir: node.dataDir });

    const field = (e: { code: number | string; name: string; message: string }, why: string) => {
      assert.equal(e.code, 400, `${why}: ${JSON.stringify(e)}`);
      assert.ok(e.message.includes('compose[0].containerData') && e.message.includes('m:..:/escape'), `${why}: ${e.message}`);
    };
    field(error(await node.get('/apps/redeploy/mntc', node.headers.b)), 'redeploy');
    field(error(await node.get('/apps/redeploycomponent/mntc/web', node.headers.b)), 'redeploycomponent');
    field(error(await node.get('/apps/testappinstall/mntd', node.headers.b)), 'testappinstall');
    // The container vanishes: the reconciler makes it again from the installed spec, and is refused.
    await docker.cli(['rm', '-f', 'coreweb_mntc']);
    await until('a recreation refused by the reconciler', async () => /starting a component failed[^\n]*m:\.\.:\/escape|m:\.\.:\/escape[^\n]*starting a component failed/.test(node.output()));
    assert.equal(await docker.inspect('coreweb_mntc').then(() => true, () => false), false);
    // Removed, then installed again from the stored global spec: refused before anything is made.
    assert.equal(last(ndjson(await node.get('/apps/appremove/mntc', node.headers.b))).status, 'success');
    field(error(await node.get('/apps/installapplocally/mntc', node.headers.admin)), 'installapplocally');
    assert.equal(fs.existsSync(mountOf('coreweb_mntc')), false);
    assert.equal(fs.existsSync(mountOf('coreweb_mntd')), false);
    await assertConfined('after the stored specifications');
  });

  it('a volume folder configured over the node\'s secrets is refused at start', async () => {
    for (const appsDir of ['/', '/tmp']) {
      let started: TenantNode | null = null;
      const failed = await startTenantNode({ docker, wallets: tenantWallets(), apps: { appsDir } }).then(
        (n) => ((started = n), null),
        (e: Error) => e,
      );
      try {
        const text = failed ? failed.message : (started as TenantNode | null)?.output() ?? '';
        assert.ok(failed, `a node with apps.appsDir ${appsDir} started`);
        assert.match(text, /apps\.appsDir .* must not be .* or a folder above it/);
      } finally {
        await (started as TenantNode | null)?.stop();
      }
    }
  });
});
