/**
 * The /filesync routes against a real Syncthing the node supervises: happy path, level matrix and bad input
 * of every route; deleted routes not routed; the API key and the GUI password hash in no answer; the key
 * re-read when it changes; the fitness check (required only when supervising and unhealthy).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { err, ok } from '../support/envelope.ts';
import type { Answer } from '../support/node.ts';
import { apiKeyOf, startFsNode, until, type FsNode } from './support.ts';

describe('filesync: routes over a supervised Syncthing', function () {
  this.timeout(120_000);
  let node: FsNode;
  const answers: Answer[] = [];
  const keys = new Set<string>();
  const seen = (a: Answer) => (answers.push(a), a);
  const post = async (p: string, body: unknown, who: 'admin' | 'coreTeam' | 'user' | null = 'admin') => seen(await node.post(p, body, who ? node.headers[who] : {}));
  const get = async (p: string) => seen(await node.get(p));

  before(async () => {
    node = await startFsNode({ n: 0 });
    keys.add(apiKeyOf(node.home));
  });
  after(async () => {
    await node?.close();
    if (node) fs.rmSync(node.dataDir, { recursive: true, force: true });
  });

  it('supervises its own Syncthing: home under the data folder, GUI on 127.0.0.1, peer port = API port + 2, discovery and relays off', async () => {
    const xml = fs.readFileSync(path.join(node.home, 'config.xml'), 'utf8');
    assert.match(xml, new RegExp(`<listenAddress>tcp://127.0.0.1:${node.port + 2}</listenAddress>`));
    assert.match(xml, /<gui[^>]*>\s*<address>127\.0\.0\.1:27001<\/address>/);
    for (const off of ['globalAnnounceEnabled', 'localAnnounceEnabled', 'relaysEnabled']) assert.match(xml, new RegExp(`<${off}>false</${off}>`));
    const health = ok(await get('/core/health'));
    assert.deepEqual(health.checks.find((c: any) => c.name === 'filesync'), { name: 'filesync', ok: true, required: true });
  });

  it('public routes: deviceid, meta, health', async () => {
    const id = ok(await get('/filesync/deviceid'));
    assert.match(id, /^[A-Z2-7]{7}(-[A-Z2-7]{7}){7}$/);
    assert.match(ok(await get('/filesync/meta')), new RegExp(id));
    assert.deepEqual(ok(await get('/filesync/health')), { status: 'OK' });
    assert.equal((await node.request('GET', '/filesync/deviceid?x=1')).status, 400);
    // Public: every caller gets the same answers.
    for (const who of ['user', 'coreTeam', 'admin'] as const)
      for (const p of ['/filesync/deviceid', '/filesync/meta', '/filesync/health']) assert.equal(seen(await node.get(p, node.headers[who])).json.status, 'success', `${who} on ${p}`);
    // promotedfolders is public too; this node runs no apps plugin, which it says.
    assert.equal(err(await post('/apps/promotedfolders', {}, null)).name, 'AppsUnavailable');
  });

  const folderPath = () => path.join(node.dataDir, 'shared-folder');
  const ADMIN_ROUTES: [string, unknown][] = [
    ['/filesync/config/folders', { config: { id: 'levels', path: '/tmp/h18b-never-made' } }],
    ['/filesync/config/gui', { method: 'patch', config: { theme: 'dark' } }],
    ['/filesync/config/ldap', { method: 'patch', config: { searchFilter: '(uid=%s)' } }],
    ['/filesync/db/ignores?folder=docs', { config: { ignore: [] } }],
    ['/filesync/db/scan', {}],
    ['/filesync/db/revert', { folder: 'docs' }],
    ['/filesync/db/prio', { folder: 'docs', file: 'a.txt' }],
    ['/filesync/db/override', { folder: 'docs' }],
    ['/filesync/cluster/pending/devices', { device: 'AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA' }],
    ['/filesync/cluster/pending/folders', { folder: 'docs' }],
    ['/filesync/system/error', 'levels'],
    ['/filesync/system/error/clear', ''],
    ['/filesync/system/upgrade', ''],
  ];

  it('level matrix: every POST route refuses anonymous, user and core team callers (401), and runs for the admin', async () => {
    ok(await post('/filesync/config/folders', { config: { id: 'docs', label: 'docs', path: folderPath() } }));
    for (const [p, body] of ADMIN_ROUTES) {
      for (const who of [null, 'user', 'coreTeam'] as const) assert.equal(err(await post(p, body, who), 200).code, 401, `${who ?? 'anonymous'} on ${p}`);
    }
    // The folder of the matrix's own body was never made: nothing ran for the refused callers.
    assert.doesNotMatch(fs.readFileSync(path.join(node.home, 'config.xml'), 'utf8'), /id="levels"/);
  });

  it('config/folders: add, patch, read back through a put, delete; ids and methods checked', async () => {
    ok(await post('/filesync/config/folders', { id: 'docs', method: 'patch', config: { label: 'Documents', rescanIntervalS: 120 } }));
    assert.match(fs.readFileSync(path.join(node.home, 'config.xml'), 'utf8'), /label="Documents"/);
    ok(await post('/filesync/config/folders', { id: 'docs', method: 'PUT', config: { id: 'docs', label: 'Docs', path: folderPath() } }));
    assert.equal(err(await post('/filesync/config/folders', { id: '../x', method: 'delete' })).message, 'Invalid ID supplied');
    assert.equal(err(await post('/filesync/config/folders', { config: { id: 'a b', path: '/tmp/x' } })).message, 'Invalid ID supplied');
    assert.match(err(await post('/filesync/config/folders', { id: 'docs', method: 'get' })).message, /method must be one of/);
    assert.match(err(await post('/filesync/config/folders', { id: 'docs', method: 'options' })).message, /method must be one of/);
    assert.equal(err(await post('/filesync/config/folders', { method: 'post' })).message, 'config is required');
    assert.match(err(await post('/filesync/config/folders', '[1,2]')).message, /JSON object/);
    ok(await post('/filesync/config/folders', { config: { id: 'gone', path: path.join(node.dataDir, 'gone') } }));
    ok(await post('/filesync/config/folders', { id: 'gone', method: 'delete' }));
    assert.doesNotMatch(fs.readFileSync(path.join(node.home, 'config.xml'), 'utf8'), /id="gone"/);
    // A Syncthing refusal comes back as an error with Syncthing's status and message.
    const e = err(await post('/filesync/config/folders', { id: 'nosuch', method: 'patch', config: { label: 'x' } }));
    assert.equal(e.code, 404);
    assert.equal(e.name, 'FileSyncError');
  });

  it('config/gui and config/ldap: put and patch only; the GUI answer carries no key or password hash', async () => {
    ok(await post('/filesync/config/gui', { method: 'patch', config: { theme: 'black' } }));
    assert.match(err(await post('/filesync/config/gui', { method: 'delete', config: {} })).message, /method must be one of/);
    assert.equal(err(await post('/filesync/config/gui', { method: 'patch' })).message, 'config is required');
    ok(await post('/filesync/config/ldap', { method: 'patch', config: { address: 'ldap.example:389' } }));
    assert.match(err(await post('/filesync/config/ldap', { method: 'post', config: {} })).message, /method must be one of/);
    assert.match(err(await post('/filesync/config/gui', { method: 'patch', config: { address: '0.0.0.0:8384' } })).message, /set by the node/);
    // A password set through the route is stored hashed by Syncthing and never answered.
    ok(await post('/filesync/config/gui', { method: 'patch', config: { user: 'op', password: 'secret-password' } }));
    const hash = /<password>([^<]+)<\/password>/.exec(fs.readFileSync(path.join(node.home, 'config.xml'), 'utf8'))?.[1];
    assert.ok(hash && hash.startsWith('$2'), 'Syncthing keeps a bcrypt hash');
    keys.add(hash!);
  });

  it('GUI changes back to back: each is answered once the restarted listener serves, so the next call (an unretried ping among them) succeeds', async () => {
    for (const theme of ['dark', 'default']) {
      ok(await post('/filesync/config/gui', { method: 'patch', config: { theme } }));
      assert.deepEqual(ok(await get('/filesync/health')), { status: 'OK' });
      ok(await post('/filesync/config/ldap', { method: 'patch', config: { searchBaseDN: `ou=${theme}` } }));
    }
    // A change that changes nothing (no restart to wait for) is answered, and the API still serves.
    ok(await post('/filesync/config/gui', { method: 'patch', config: { theme: 'default' } }));
    assert.deepEqual(ok(await get('/filesync/health')), { status: 'OK' });
  });

  it('db routes: ignores (folder in the query), scan, revert, prio, override; mandatory fields and ids', async () => {
    fs.mkdirSync(folderPath(), { recursive: true });
    ok(await post('/filesync/db/ignores?folder=docs', { config: { ignore: ['*.tmp'] } }));
    assert.equal(fs.readFileSync(path.join(folderPath(), '.stignore'), 'utf8').trim(), '*.tmp');
    assert.equal(err(await post('/filesync/db/ignores', { folder: 'docs', config: { ignore: [] } })).message, 'folder parameter is mandatory');
    assert.equal(err(await post('/filesync/db/ignores?folder=a%26b', { config: { ignore: [] } })).message, 'Invalid ID supplied');
    assert.match(err(await post('/filesync/db/ignores?folder=docs', { config: { ignore: 'x' } })).message, /ignore/);
    ok(await post('/filesync/db/scan', { folder: 'docs' }));
    ok(await post('/filesync/db/scan', { folder: 'docs', sub: 'a/b', next: 5 }));
    assert.match(err(await post('/filesync/db/scan', { folder: 'docs', sub: '../etc' })).message, /inside the folder/);
    assert.match(err(await post('/filesync/db/scan', { next: -1 })).message, /next must be at least 0/);
    fs.writeFileSync(path.join(folderPath(), 'a.txt'), 'a');
    ok(await post('/filesync/db/prio', { folder: 'docs', file: 'a.txt' }));
    assert.equal(err(await post('/filesync/db/prio', { file: 'a.txt' })).message, 'folder parameter is mandatory');
    assert.equal(err(await post('/filesync/db/prio', { folder: 'docs' })).message, 'file parameter is mandatory');
    for (const r of ['revert', 'override']) {
      // Syncthing refuses both on a send-receive folder: its refusal is answered, not a crash.
      const a = await post(`/filesync/db/${r}`, { folder: 'docs' });
      assert.ok(a.json.status === 'success' || a.json.data.name === 'FileSyncError', a.text);
      assert.equal(err(await post(`/filesync/db/${r}`, {})).message, 'folder parameter is mandatory');
      assert.equal(err(await post(`/filesync/db/${r}`, { folder: 'x?y=1' })).message, 'Invalid ID supplied');
    }
  });

  it('cluster/pending: devices and folders dismissed with delete only; device ids checked', async () => {
    const dev = 'AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA-AAAAAAA';
    ok(await post('/filesync/cluster/pending/devices', { device: dev }));
    ok(await post('/filesync/cluster/pending/folders', { folder: 'docs', device: dev }));
    assert.equal(err(await post('/filesync/cluster/pending/devices', { device: 'x&device=1' })).message, 'Invalid ID supplied');
    assert.equal(err(await post('/filesync/cluster/pending/devices', {})).message, 'device parameter is mandatory');
    assert.match(err(await post('/filesync/cluster/pending/devices', { device: dev, method: 'get' })).message, /method must be one of/);
    assert.equal(err(await post('/filesync/cluster/pending/folders', { device: dev })).message, 'folder parameter is mandatory');
  });

  it('system: error (text or {message}), error/clear, upgrade (refused by the Debian build, answered as an error)', async () => {
    ok(await post('/filesync/system/error', 'disk almost full'));
    ok(await post('/filesync/system/error', { message: 'from json' }));
    assert.equal(err(await post('/filesync/system/error', '')).message, 'The error message is required');
    ok(await post('/filesync/system/error/clear', ''));
    const up = await post('/filesync/system/upgrade', '');
    assert.ok(up.json.status === 'success' || up.json.data.name === 'FileSyncError', up.text);
  });

  it('deleted read, debug, event and control routes are not routed (404)', async () => {
    for (const p of ['/filesync/config', '/filesync/config/gui', '/filesync/system/status', '/filesync/events', '/filesync/debug/support', '/filesync/db/status', '/filesync/system/restart', '/filesync/system/shutdown', '/filesync/svc/report'])
      assert.equal((await node.get(p, node.headers.admin)).status, 404, p);
    assert.equal((await node.request('DELETE', '/filesync/config/folders', { headers: node.headers.admin })).status, 404);
  });

  it('the API key is re-read when it changes (a new key set through the GUI config)', async () => {
    const before = apiKeyOf(node.home);
    ok(await node.post('/filesync/config/gui', { method: 'patch', config: { apiKey: 'NewKeyOfTheFilesyncTest0123456789' } }, node.headers.admin));
    await until('the new key in config.xml', () => apiKeyOf(node.home) !== before);
    keys.add(apiKeyOf(node.home));
    assert.match(ok(await get('/filesync/deviceid')), /^[A-Z2-7]{7}-/);
  });

  it('no answer carried the API key or the GUI password hash', () => {
    assert.ok(answers.length > 60, `${answers.length} answers seen`);
    for (const a of answers) for (const k of keys) assert.ok(!a.text.includes(k), `an answer carried a secret: ${a.text.slice(0, 200)}`);
  });

  it('the supervisor starts Syncthing again when it dies', async () => {
    const pid = Number(execFileSync('pgrep', ['-f', '--', `--home=${node.home}`]).toString().trim().split('\n')[0]);
    process.kill(pid, 'SIGKILL');
    await until('Syncthing back', async () => {
      const p = execFileSync('pgrep', ['-f', '--', `--home=${node.home}`]).toString().trim();
      return p && Number(p.split('\n')[0]) !== pid && (await node.get('/filesync/health')).json.status === 'success';
    });
  });
});

describe('filesync: the fitness check', function () {
  this.timeout(60_000);
  it('a node that supervises a Syncthing that cannot run is unhealthy and refuses login phrases', async () => {
    const node = await startFsNode({ n: 1, filesync: { binary: '/bin/false' }, login: false });
    try {
      const first = ok(await node.get('/core/health')).checks.find((c: any) => c.name === 'filesync');
      assert.equal(first.required, true);
      await until('unhealthy', async () => ok(await node.get('/core/health')).healthy === false);
      const e = err(await node.get('/id/loginphrase'));
      assert.match(e.message, /fitness checks/);
      assert.equal(err(await node.get('/filesync/health')).message, 'Syncthing is not running properly');
      assert.equal(err(await node.get('/filesync/deviceid')).message, 'Syncthing is not running properly');
    } finally {
      await node.close();
      fs.rmSync(node.dataDir, { recursive: true, force: true });
    }
  });

  it('a node just started, its Syncthing still starting, issues login phrases', async () => {
    const node = await startFsNode({ n: 6, login: false });
    try {
      for (let i = 0; i < 3; i++) assert.match(ok(await node.get('/id/loginphrase')), /^\d{13}/);
      await until('Syncthing answers', async () => (await node.get('/filesync/health')).json.status === 'success');
    } finally {
      await node.close();
      fs.rmSync(node.dataDir, { recursive: true, force: true });
    }
  });

  it('a node that talks to an existing Syncthing it cannot reach reports it and still issues phrases', async () => {
    const node = await startFsNode({ n: 2, filesync: { mode: 'external', url: 'http://127.0.0.1:27041', configDir: '/tmp/h18b-none' }, login: false });
    try {
      for (let i = 0; i < 3; i++) ok(await node.get('/core/health'));
      const check = ok(await node.get('/core/health')).checks.find((c: any) => c.name === 'filesync');
      assert.deepEqual(check, { name: 'filesync', ok: false, required: false });
      assert.match(ok(await node.get('/id/loginphrase')), /^\d{13}/);
      assert.equal(err(await node.get('/filesync/health')).message, 'Unable to read syncthing apikey');
    } finally {
      await node.close();
      fs.rmSync(node.dataDir, { recursive: true, force: true });
    }
  });
});
