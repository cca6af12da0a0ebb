/**
 * An attack corpus over every surface a tenant reaches, against one node process with all its plugins: owner
 * B (the attacker, paying, with an app of its own) goes after owner A's app (the victim) and the node itself
 * through the volumes, mounts, archives, app specifications, logs, global commands, the peer socket and the
 * node's operations. Each attack's answer is kept; the last test judges the whole run by what the host shows:
 * - 0 escapes: every bind of every app container resolves inside its own app's volumes, A's files and A's
 *   container are as they were, no file the attacks name appears outside a volume;
 * - 0 secrets in plain text: neither the node's keys nor a registry password appear in any answer, and the
 *   password is nowhere in the node's data folder;
 * - 0 answers of 5xx;
 * - the node's RSS under 150 MB once the floods are over.
 * The per-rule tests of this folder pin each rule; this file is the breadth.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { TestDocker } from '../support/docker.ts';
import type { Regtest } from '../support/litecoind.ts';
import type { Answer } from '../support/node.ts';
import { IDLE, component, last, ndjson, until, v8Spec } from '../apps/support.ts';
import { hostileArchives, tgz } from '../volumes/archives.ts';
import { Rogue } from '../peers/rogue.ts';
import { joinPeer } from './peer.ts';
import { freeTenantPort, registerAndPay, removeFromDocker, runOperation, paidWorld, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

const ALL_PLUGINS = ['identity', 'daemon', 'explorer', 'apps', 'volumes', 'peers', 'filesync', 'benchmark'];
const MARKER = `corpus${crypto.randomBytes(4).toString('hex')}`;
const PASSWORD = `pw-${MARKER}-secret`;

/** Every entry below `dir` as [relative path, lstat], never descending into a link. */
function walk(dir: string, rel = ''): [string, fs.Stats][] {
  const out: [string, fs.Stats][] = [];
  for (const name of fs.readdirSync(path.join(dir, rel))) {
    const r = path.join(rel, name);
    const st = fs.lstatSync(path.join(dir, r));
    out.push([r, st]);
    if (st.isDirectory()) out.push(...walk(dir, r));
  }
  return out;
}

interface Tried {
  surface: string;
  what: string;
  status: number;
  text: string;
}

describe('tenants: an attack corpus over every surface (one node process, all plugins)', function () {
  this.timeout(600_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;
  let registryAddress: string;
  const tried: Tried[] = [];
  let victimStartedAt = '';
  let victimFiles = '';
  const mounts = () => path.join(node.dataDir, 'apps', 'mounts');
  const victimData = () => path.join(mounts(), 'coreweb_victim', 'appdata');
  const attackerData = () => path.join(mounts(), 'coreweb_attacker', 'appdata');

  /** Send one attack and keep its answer. */
  async function attack(surface: string, what: string, send: () => Promise<Answer>): Promise<Answer> {
    const a = await send();
    tried.push({ surface, what, status: a.status, text: a.text });
    return a;
  }
  const asB = (p: string) => node.get(p, node.headers.b);
  /** An operation as B to its end: the start's status, the operation's record as the text (the start's when refused). */
  async function operation(p: string, body: unknown): Promise<Answer> {
    const { started, done } = await runOperation(node, node.headers.b, p, body);
    return done ? { ...started, text: JSON.stringify(done), json: done } : started;
  }
  const tree = (dir: string) =>
    walk(dir)
      .map(([r, st]) => `${r}:${st.isFile() ? crypto.createHash('sha256').update(fs.readFileSync(path.join(dir, r))).digest('hex') : st.isSymbolicLink() ? 'link' : 'dir'}`)
      .sort()
      .join('\n');

  before(async () => {
    ({ docker, ltc, registryAddress } = await paidWorld());
    node = await startTenantNode({
      docker,
      ltc,
      registryAddress,
      wallets: w,
      plugins: ALL_PLUGINS,
      config: { peers: { seeds: [], membership: 'open' } },
    });
    for (const [owner, name] of [['a', 'victim'], ['b', 'attacker']] as const) {
      const spec = v8Spec(w[owner].legacyid, name, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]);
      await registerAndPay(node, ltc, registryAddress, owner, w, spec);
      const lines = ndjson(await node.get(`/apps/installapplocally/${name}`, node.headers.admin));
      assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    }
    await docker.cli(['exec', 'coreweb_victim', 'sh', '-c', `echo ${MARKER}-of-a > /data/a.txt && mkdir /data/docs && echo private > /data/docs/p.txt`]);
    await until('A’s files on the host', async () => fs.existsSync(path.join(victimData(), 'docs', 'p.txt')));
    victimFiles = tree(victimData());
    victimStartedAt = (await docker.inspect('coreweb_victim')).State.StartedAt;
  });
  after(async () => {
    await node?.stop();
    if (docker) await removeFromDocker(docker, ['victim', 'attacker']);
    await ltc?.stop();
  });

  it('volumes: B browses, downloads and changes A’s volume by name, by path and through links it planted', async () => {
    for (const p of [
      '/apps/getfolderinfo/victim/web',
      '/apps/getfolderinfo/victim/web/appdata',
      '/apps/downloadfile/victim/web/appdata%2Fa.txt',
      '/apps/downloadfolder/victim/web/appdata',
      '/apps/getfolderinfo/attacker/web/..%2Fcoreweb_victim',
      '/apps/downloadfile/attacker/web/..%2F..%2Fsecret.key',
      '/apps/downloadfile/attacker/web/appdata%2F..%2F..%2Fcoreweb_victim%2Fappdata%2Fa.txt',
      '/apps/downloadfile/attacker/web/%2Fetc%2Fpasswd',
      '/apps/removeobject/victim/web/appdata%2Fa.txt',
      '/apps/renameobject/victim/web/appdata%2Fa.txt/b.txt',
      '/apps/createfolder/victim/web/appdata%2Fowned',
      '/backup/getvolumedataofcomponent/victim/web',
      '/backup/getlocalbackuplist/local/MB/0/false/victim',
    ])
      await attack('volumes', `B: GET ${p}`, () => asB(p));
    // Links B's container plants in its own data, then B's reads through them.
    await docker.cli(['exec', 'coreweb_attacker', 'sh', '-c', `ln -s / /data/root && ln -s ${victimData()} /data/victim && ln -s ${node.dataDir} /data/nodedata`]);
    await until('B’s links on the host', async () => fs.existsSync(path.join(attackerData(), 'nodedata')) || fs.lstatSync(path.join(attackerData(), 'nodedata'), { throwIfNoEntry: false }));
    for (const l of ['root', 'victim', 'nodedata']) {
      for (const p of [`/apps/getfolderinfo/attacker/web/appdata%2F${l}`, `/apps/downloadfile/attacker/web/appdata%2F${l}%2Fa.txt`, `/apps/downloadfolder/attacker/web/appdata%2F${l}`, `/apps/downloadfile/attacker/web/appdata%2F${l}%2Fapps%2Fsecret.key`])
        await attack('volumes', `B: GET ${p} (planted link)`, () => asB(p));
      for (const [route, body] of [
        ['/apps/copyobject', { appname: 'attacker', component: 'web', source: `appdata/${l}`, target: `appdata/copy-${l}` }],
        ['/apps/compressobject', { appname: 'attacker', component: 'web', folder: 'appdata', entries: [l], target: `appdata/${l}.tar.gz` }],
        // The link moved into the place of a mount root, then a restart: Docker would follow it.
        ['/apps/moveobject', { appname: 'attacker', component: 'web', source: 'appdata', target: 'moved-away' }],
        ['/apps/moveobject', { appname: 'attacker', component: 'web', source: `appdata/${l}`, target: 'appdata' }],
        ['/apps/moveobject', { appname: 'attacker', component: 'web', source: `appdata/${l}`, target: 'backup' }],
      ] as const)
        await attack('volumes', `B: ${route} ${JSON.stringify(body)}`, () => operation(route, body));
    }
    for (const p of ['/apps/renameobject/attacker/web/appdata/gone', '/apps/removeobject/attacker/web/appdata'])
      await attack('volumes', `B: GET ${p} (a mount root)`, () => asB(p));
    await attack('volumes', 'B: restart of its own app after the swaps', () => asB('/apps/apprestart/attacker'));
  });

  it('one name per request: B names its own app in one place and A’s in another', async () => {
    for (const [route, body] of [
      ['/apps/moveobject', { appname: 'victim', component: 'web', source: 'appdata/a.txt', target: 'appdata/stolen.txt' }],
      ['/apps/copyobject', { appname: 'victim', component: 'web', source: 'appdata/docs', target: 'appdata/docs2' }],
      ['/apps/compressobject', { appname: 'victim', component: 'web', folder: 'appdata', entries: ['docs'], target: 'appdata/docs.tar.gz' }],
      ['/apps/appendbackuptask', { appname: 'victim', backup: [{ component: 'web' }] }],
      ['/apps/appendrestoretask', { appname: 'victim', type: 'remote', restore: [{ component: 'web', url: 'http://127.0.0.1:9/x.tar.gz' }] }],
    ] as const)
      await attack('names', `B: ${route}?appname=attacker with ${JSON.stringify(body)}`, () => operation(`${route}?appname=attacker`, body));
    for (const p of ['/apps/applog/victim?appname=attacker', '/apps/appstop/victim?appname=attacker', '/apps/getfolderinfo/victim/web?appname=attacker'])
      await attack('names', `B: GET ${p}`, () => asB(p));
  });

  it('archives: B extracts hostile archives, link chains among them, into its own volume', async () => {
    const chain = [{ name: 'c/s0', type: 'symlink' as const, linkname: '.' }];
    for (let k = 1; k <= 8; k++) chain.push({ name: `c/s${k}`, type: 'symlink', linkname: `s${k - 1}/..` });
    const archives = [...(await hostileArchives(MARKER)), { why: 'link chain to /', data: await tgz([...chain, { name: `c/s8/tmp/${MARKER}-chain`, body: 'pwned' }]) }, { why: 'link chain left in place', data: await tgz(chain) }];
    for (const [k, a] of archives.entries()) {
      fs.writeFileSync(path.join(attackerData(), `h${k}.tar.gz`), a.data);
      await attack('archives', `B: extract ${a.why}`, () => operation('/apps/extractobject', { appname: 'attacker', component: 'web', source: `appdata/h${k}.tar.gz`, target: `appdata/x${k}` }));
    }
    // Whatever was extracted, no link in B's volume may lead out of it.
    for (const [r, st] of walk(attackerData()))
      if (st.isSymbolicLink() && /^x\d+/.test(r)) {
        const real = fs.realpathSync(path.join(attackerData(), r));
        assert.ok(real.startsWith(attackerData() + path.sep) || real === attackerData(), `an extracted link ${r} resolves to ${real}`);
      }
  });

  it('app specifications: mounts, ports, images, credentials and sizes that reach past the app', async () => {
    const base = (c: Record<string, unknown>, top: Record<string, unknown> = {}) => ({ ...v8Spec(w.b.legacyid, 'evilapp', [component('web', docker.images.busybox, 29990, 8080, { commands: IDLE, ...c })]), ...top });
    const specs: [string, Record<string, unknown>][] = [
      ...['/data|m:..:/escape', '/data|f:..:/escape', '/data|m:.:/vol', '/data|m::/x', '/data|m:a/b:/x', '/data|f:.corenode-staging:/x', '/data|m:..%2f:/x', 'r:/data|m:..:/x'].map((cd) => [`containerData ${cd}`, base({ containerData: cd })] as [string, Record<string, unknown>]),
      ...[node.port, node.port + 1, 9001, 22000, 21027, 8384, 16127].map((p) => [`port ${p}`, base({ ports: [p] })] as [string, Record<string, unknown>]),
      ...['127.0.0.1:5000/x:1', 'localhost:5000/x:1', '169.254.169.254/x:1', '10.1.2.3/x:1', '192.168.1.1:5000/x:1', '172.16.0.1/x:1', '[::1]:5000/x:1', '127.1:5000/x:1'].map((r) => [`repotag ${r}`, base({ repotag: r })] as [string, Record<string, unknown>]),
      ['repoauth in plain text', base({ repoauth: `user:${PASSWORD}` })],
      ['hdd over every tier', base({ hdd: 100000 })],
      ['a component named ..', base({ name: '..' })],
    ];
    for (const [what, spec] of specs) {
      const a = await attack('specs', `verify ${what}`, () => node.post('/apps/verifyappregistrationspecifications', spec));
      assert.notEqual(a.json?.status, 'success', `${what} was accepted: ${a.text.slice(0, 300)}`);
    }
    // The password, registered: refused, and never stored.
    const { signedMessage } = await import('../apps/support.ts');
    await attack('specs', 'register with a plain repoauth', async () => node.post('/apps/appregister', await signedMessage(w.b, base({ repoauth: `user:${PASSWORD}` })), node.headers.b));
  });

  let rssBeforeFloods = 0;
  it('logs: B reads A’s log, then floods the node with reads of its own 13 MB log', async () => {
    rssBeforeFloods = node.rssMb();
    await attack('logs', 'B: applog of A', () => asB('/apps/applog/victim'));
    await attack('logs', 'B: applogpolling of A', () => asB('/apps/applogpolling/victim/100'));
    await docker.cli(['exec', 'coreweb_attacker', 'sh', '-c', 'i=0; while [ $i -lt 140000 ]; do echo "line $i of a log that fills the json-file driver quickly, padded out to about ninety bytes"; i=$((i+1)); done > /proc/1/fd/1']);
    const flood = await Promise.all(Array.from({ length: 16 }, () => asB('/apps/applog/attacker/all').catch((e) => ({ status: 0, text: String(e) }) as Answer)));
    for (const a of flood) tried.push({ surface: 'logs', what: 'B: applog all of its own log (x16 at once)', status: a.status, text: a.text.slice(0, 200) });
  });

  it('global commands and node operations: B and an outsider act on A’s app and on the node', async () => {
    for (const p of ['/apps/appremove/victim/true/true', '/apps/appstop/victim/true', '/apps/redeploy/victim/true/true', '/apps/appkill/victim/true'])
      await attack('global', `B: GET ${p}`, () => asB(p));
    // Where adjustapiport stores the port for the next start (plugins/node/overlay.ts).
    const overlay = path.join(node.dataDir, 'operator-overlay.json');
    const portFile = () => (fs.existsSync(overlay) ? fs.readFileSync(overlay, 'utf8') : null);
    const before = portFile();
    await attack('node', 'anonymous /core/adjustapiport/16137', () => node.get('/core/adjustapiport/16137'));
    await attack('node', 'B: /core/adjustapiport/16147', () => asB('/core/adjustapiport/16147'));
    assert.equal(portFile(), before, 'a port setting was written');
  });

  it('peers: a peer names A as the caller of appremove, unsigned and forged; another asks for catch-ups and never reads', async () => {
    const p = await joinPeer(node.port, 29991);
    const results: any[] = [];
    p.peer.on('appcommandresult', (m) => results.push(m.payload));
    const forged = [
      ['unsigned', {}],
      ['garbage signature', { timestamp: Date.now(), signature: `H${'A'.repeat(87)}` }],
      ['B signs in A’s name', { timestamp: Date.now(), signature: await w.b.sign('corenode global command') }],
    ] as const;
    try {
      for (const [k, [what, fields]] of forged.entries())
        p.peer.broadcast('appcommand', { id: `corpus-${k}`, verb: 'appremove', app: 'victim', caller: w.a.legacyid, force: true, issuedAt: Date.now(), ...fields, what });
      await until('an answer to each command', async () => forged.every((_, k) => results.some((r) => r.id === `corpus-${k}`)));
    } finally {
      p.stop();
    }
    for (const r of results) tried.push({ surface: 'peers', what: `peer: appremove of A’s app (${r.id})`, status: 200, text: JSON.stringify(r) });
    assert.ok(results.every((r) => r.ok === false), JSON.stringify(results));
    // A peer that reads nothing while the node answers its catch-ups.
    const r = new Rogue(`ws://127.0.0.1:${node.port}/ws/core`, 29992);
    await r.join();
    for (let i = 0; i < 40; i++) {
      const m = JSON.stringify({ type: 'corpus.fill', payload: 'f'.repeat(8000), origin: r.keys.publicKey, sentAt: Date.now(), nonce: `n${i}` });
      r.send('gossip', { m, s: r.keys.sign(m), h: 0 });
    }
    (r.ws as any).pause();
    try {
      for (let sent = 0; sent < 2_000 && !r.closed; sent += 15) {
        for (let k = 0; k < 15; k++) r.send('sync', { since: 0 });
        const v = await node.get('/core/version');
        tried.push({ surface: 'peers', what: 'GET /core/version during the catch-up flood', status: v.status, text: v.text });
        if ((await node.get('/core/networkhealth')).json?.data?.messages?.sendQueueCuts) break;
      }
      await until('the reader-less peer cut', async () => (await node.get('/core/networkhealth')).json?.data?.messages?.sendQueueCuts >= 1);
    } finally {
      r.close();
    }
  });

  it('judges the run: no escape, no secret in plain text, no 5xx, RSS back under 150 MB', async () => {
    const fivexx = tried.filter((t) => t.status >= 500 || t.status === 0);
    assert.deepEqual(fivexx.map((t) => `${t.surface}: ${t.what}: ${t.status} ${t.text.slice(0, 200)}`), []);
    // A is as it was.
    assert.equal(tree(victimData()), victimFiles, 'A’s files changed');
    const victim = await docker.inspect('coreweb_victim');
    assert.equal(victim.State.Running, true);
    assert.equal(victim.State.StartedAt, victimStartedAt, 'A’s container was restarted');
    // Every container binds only its own app's volumes (after the restart of B's app, if it started).
    for (const name of ['coreweb_victim', 'coreweb_attacker']) {
      const own = fs.realpathSync(path.join(mounts(), name));
      const info = await docker.inspect(name).catch(() => null);
      for (const m of info?.Mounts ?? []) {
        const real = fs.existsSync(m.Source) ? fs.realpathSync(m.Source) : m.Source;
        assert.ok(real.startsWith(own + path.sep), `${name} binds ${m.Source} (${real}) outside ${own}`);
      }
    }
    // Nothing the archives name landed outside B's volume.
    // (the archives aim at /tmp, /etc and the folders above the volume)
    for (const dir of ['/tmp', '/etc', path.dirname(node.dataDir), node.dataDir, mounts()])
      for (const f of fs.readdirSync(dir)) assert.ok(!f.includes(MARKER), `${path.join(dir, f)} was written`);
    // No secret of the node in any answer; the password nowhere on the node's disk.
    const files = walk(node.dataDir).filter(([f, st]) => st.isFile() && !f.startsWith(path.join('apps', 'mounts')));
    const keyFiles = files.map(([f]) => f).filter((f) => /secret\.key$|node-key\.pem$/.test(f));
    assert.ok(keyFiles.length >= 2, `the node's key files: ${keyFiles}`);
    const secrets = keyFiles.flatMap((f) => {
      const k = fs.readFileSync(path.join(node.dataDir, f));
      return f.endsWith('.pem') ? k.toString('utf8').split('\n').filter((l) => l.length > 40) : [k.toString('hex'), k.toString('base64')];
    });
    for (const t of tried) for (const s of secrets) assert.ok(!t.text.includes(s), `${t.what} answered a secret of the node`);
    for (const t of tried) assert.ok(!t.text.includes(PASSWORD), `${t.what} answered the password`);
    for (const [f] of files) if (!f.endsWith('COREFSVOL')) assert.ok(!fs.readFileSync(path.join(node.dataDir, f)).includes(PASSWORD), `${f} holds the password`);
    const rss = await until('RSS under 150 MB', async () => {
      const r = node.rssMb();
      return r > 0 && r < 150 ? r : null;
    }, 60_000);
    console.log(`      corpus: ${tried.length} attacks, ${new Set(tried.map((t) => t.surface)).size} surfaces, RSS ${rssBeforeFloods.toFixed(0)} MB before the floods, ${rss.toFixed(0)} MB after`);
  });
});
