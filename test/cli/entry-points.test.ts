/**
 * The real commands, as a user types them: `npm start` runs for longer than any timer in the node while it
 * answers requests, and meanwhile `npm run corectl` works against it and the build is checked; at the end
 * the node must still answer, and SIGTERM stops it cleanly. Nothing here runs in-process.
 *
 * Timers in the node (why 65 s): the identity plugin's session purge and the operations sweep run every
 * 60 s; node's HTTP server checks its connections every 30 s (the deployer's crash in issue 12 fired there);
 * the manifest watcher polls every 2 s; the explorer retries its daemon every 15 s.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { VERSION } from '../../core/version.ts';
import { processTree, readProc } from '../../scripts/lib/process-tree.ts';
import { clientAt } from '../support/node.ts';
import { bitcoinWallet, login } from '../support/wallets.ts';
import { REPO_ROOT, Service, corectl, eventually, freePort, get, run, tempDir } from './support.ts';

const MIN_RUN_MS = 65_000;

describe('CLI entry points, run as real commands', function () {
  this.timeout(120_000);
  let dir: string;
  let env: Record<string, string>;
  let base: string;
  let node: Service;
  let startedAt: number;
  let pids: number[];
  const operator = bitcoinWallet();

  before(async function () {
    // `npm start` builds a stale tree itself; building here first keeps a build (tens of seconds on a busy
    // machine) out of the start below, and a broken build fails here with tsc's message.
    this.timeout(300_000);
    const built = await run(process.execPath, ['scripts/build.mjs', '--if-stale'], { timeoutMs: 280_000 });
    assert.equal(built.code, 0, built.stderr);
    dir = tempDir('start-cli-');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    const config = path.join(dir, 'node.yaml');
    fs.writeFileSync(config, `api: { port: ${port}, host: 127.0.0.1 }\ndataDir: ${path.join(dir, 'data')}\ninitial: { legacyid: ${operator.legacyid} }\n`);
    env = { CORENODE_CONFIG: config };
    startedAt = Date.now();
    node = new Service('npm', ['start'], env);
    await eventually(async () => {
      assert.ok(!node.exit, `npm start exited (${JSON.stringify(node.exit)}):\n${node.stderr}`);
      assert.equal((await get(`${base}/core/version`)).status, 200);
    }, 120_000, 50);
  });

  after(() => {
    node?.kill();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  // Mocha runs a suite's own tests before its child suites: every test sits in a child suite, in order.
  describe('npm start', () => {
    it('npm start leaves npm and one node process, which runs the compiled JavaScript', () => {
      const tree = processTree(node.child.pid!);
      assert.equal(tree.length, 2, tree.map((p) => p.args).join('\n'));
      assert.match(tree[0].args, /^npm start/);
      assert.equal(tree[1].ppid, tree[0].pid);
      assert.match(tree[1].args, /^node --max-semi-space-size=2 scripts\/launch\.mjs dist\/core\/cli\/node\.js$/);
      pids = tree.map((p) => p.pid);
    });

    it('answers GET /core/version with the envelope', async () => {
      const res = await get(`${base}/core/version`);
      assert.deepEqual(res.json, { status: 'success', data: VERSION });
    });

    it('its software folder (updatecore, backendfolder) defaults to this checkout, not dist/', async () => {
      const client = clientAt(base);
      const { header } = await login(client, operator);
      const res = await client.get('/core/backendfolder', { legacyidauth: header });
      assert.deepEqual(res.json, { status: 'success', data: REPO_ROOT });
    });
  });

  describe('npm run corectl, against the running node', () => {
    it('plugins list: the node plugins with the routes the node serves, none of the deployer listener', async () => {
      const table = await corectl(['plugins', 'list'], env);
      assert.equal(table.code, 0, table.stderr);
      assert.match(table.stdout, /^PLUGIN\s+STATE\s+SET BY\s+MANIFEST\s+ROUTES$/m);
      assert.match(table.stdout, /^explorer\s+enabled\s+default\s+explorer\.yaml\s+\d+$/m);
      const rows = JSON.parse((await corectl(['plugins', 'list', '--json'], env, true)).stdout) as { plugin: string; enabled: boolean; routes: number }[];
      // Every shipped plugin but the deployer, which serves its own listener in its own process.
      const shipped = fs.readdirSync(path.join(REPO_ROOT, 'plugins')).filter((d) => d !== 'deployer' && fs.existsSync(path.join(REPO_ROOT, 'plugins', d, 'index.ts')));
      assert.deepEqual(rows.map((r) => r.plugin), ['host', ...shipped].sort());
      assert.ok(rows.every((r) => r.enabled));
      // The node logs how many routes it serves when it starts listening: the list counts exactly those.
      const listening = node.stdout.split('\n').find((l) => l.includes('node API listening'));
      assert.ok(listening, node.stdout);
      assert.equal(rows.reduce((n, r) => n + r.routes, 0), JSON.parse(listening).routes);
    });

    it('plugins disable and enable: the running node applies each at once', async () => {
      const off = await corectl(['plugins', 'disable', 'explorer'], env);
      assert.equal(off.code, 0, off.stderr);
      assert.match(off.stdout, /explorer disabled \(written to .*plugins\.json/);
      await eventually(async () => assert.equal((await get(`${base}/explorer/scannedheight`)).json?.data?.name, 'PluginDisabled'));
      assert.match((await corectl(['plugins', 'list'], env)).stdout, /^explorer\s+disabled\s+state file/m);
      const on = await corectl(['plugins', 'enable', 'explorer'], env);
      assert.equal(on.code, 0, on.stderr);
      await eventually(async () => assert.notEqual((await get(`${base}/explorer/scannedheight`)).json?.data?.name, 'PluginDisabled'));
    });

    it('plugins enable|disable refuse an unknown plugin, a host plugin and a plugin of another service', async () => {
      const unknown = await corectl(['plugins', 'disable', 'nosuch'], env);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /unknown plugin 'nosuch' \(known: [a-z, ]*\bnode\b[a-z, ]*\)/);
      assert.doesNotMatch(unknown.stderr, /deployer/);
      const host = await corectl(['plugins', 'disable', 'host'], env);
      assert.equal(host.code, 1);
      assert.match(host.stderr, /part of the host/);
      const deployer = await corectl(['plugins', 'enable', 'deployer'], env);
      assert.equal(deployer.code, 1);
      assert.match(deployer.stderr, /the deployer plugin serves the deployer listener, another process than this node's api/);
    });

    it('manifests validate: ok for the node folder; file:line:col and exit 1 for a bad manifest', async () => {
      const ok = await corectl(['manifests', 'validate'], env);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /^ok: \d+ manifest\(s\), \d+ route\(s\)$/m);
      const bad = path.join(dir, 'bad.yaml');
      fs.writeFileSync(bad, 'format: 1\nplugin: node\nversion: 1.0.0\nroutes:\n  - { id: node.x, path: /x, handler: version, level: public, bogus: 1 }\n');
      const res = await corectl(['manifests', 'validate', bad], env);
      assert.equal(res.code, 1);
      assert.match(res.stderr, /bad\.yaml:5:\d+: routes\[0\]\.bogus: is not a known key/);
    });

    it('manifests validate: the compiled plugins check their routes\' data (a misspelled x key is refused)', async () => {
      // The check imports each plugin's definition: from dist/ here, where a path to index.ts would find none.
      const folder = path.join(dir, 'misspelled');
      fs.mkdirSync(folder);
      const current = path.join(REPO_ROOT, 'manifests');
      for (const f of fs.readdirSync(current).filter((x) => x.endsWith('.yaml'))) fs.copyFileSync(path.join(current, f), path.join(folder, f));
      const daemon = path.join(folder, 'daemon.yaml');
      const text = fs.readFileSync(daemon, 'utf8');
      assert.match(text, /x: \{ params: /);
      fs.writeFileSync(daemon, text.replace(/x: \{ params: /, 'x: { parms: '));
      const res = await corectl(['manifests', 'validate', folder], env);
      assert.equal(res.code, 1, res.stdout);
      assert.match(res.stderr, /daemon\.yaml:\d+:\d+: x\.parms: is not a known key/);
    });

    it('manifests diff: a folder without the node manifest removes exactly its routes', async () => {
      const proposed = path.join(dir, 'proposed');
      fs.mkdirSync(proposed);
      const current = path.join(REPO_ROOT, 'manifests');
      for (const f of fs.readdirSync(current).filter((x) => x.endsWith('.yaml') && x !== 'node.yaml')) fs.copyFileSync(path.join(current, f), path.join(proposed, f));
      const res = await corectl(['manifests', 'diff', proposed], env);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^- node\.version\s+GET \/core\/version\s+\(no longer routed\)$/m);
      const nodeRoutes = (JSON.parse((await corectl(['plugins', 'list', '--json'], env, true)).stdout) as { plugin: string; routes: number }[]).find((r) => r.plugin === 'node')!.routes;
      assert.match(res.stdout, new RegExp(`^0 added, ${nodeRoutes} removed, 0 changed$`, 'm'));
    });

    it('manifests routes: the route table, as text and as JSON', async () => {
      const text = await corectl(['manifests', 'routes'], env);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^GET\s+\/core\/version\s+public\s+node\s+version$/m);
      const rows = JSON.parse((await corectl(['manifests', 'routes', '--json'], env, true)).stdout) as { path: string; plugin: string; method: string }[];
      assert.ok(rows.some((r) => r.path === '/core/version' && r.plugin === 'node' && r.method === 'GET'));
    });

    it('help, and exit code 2 for an unknown command', async () => {
      const help = await corectl(['help'], env);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /usage: npm run corectl -- <command>/);
      const bad = await corectl(['plugins', 'frobnicate'], env);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /unknown command: plugins frobnicate/);
    });
  });

  describe('the build behind the commands', () => {
    it('dist/ is git-ignored', async () => {
      const res = await run('git', ['check-ignore', '-q', 'dist/core/cli/node.js']);
      assert.equal(res.code, 0, 'dist/ must not be committed');
    });

    it('after a pull (a source changed, a file removed) the command rebuilds before it runs; --check refuses the stale build', async function () {
      this.timeout(300_000);
      // A copy of the checkout with the current build (timestamps kept, so the build stamp still matches).
      const copy = path.join(dir, 'checkout');
      for (const d of ['core', 'lib', 'plugins', 'scripts', 'manifests', 'ui', 'dist'])
        fs.cpSync(path.join(REPO_ROOT, d), path.join(copy, d), { recursive: true, preserveTimestamps: true });
      for (const f of ['package.json', 'tsconfig.json']) fs.cpSync(path.join(REPO_ROOT, f), path.join(copy, f), { preserveTimestamps: true });
      fs.symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(copy, 'node_modules'));
      const check = () => run(process.execPath, ['scripts/build.mjs', '--check'], { cwd: copy });
      const fresh = await check();
      assert.equal(fresh.code, 0, fresh.stderr);

      // What a pull does: a file removed (a copied asset, so the tree still compiles), a source rewritten;
      // and a compiled file whose source is gone must not survive the rebuild.
      fs.rmSync(path.join(copy, 'plugins/deployer/static-server.mjs'));
      const removed = await check();
      assert.equal(removed.code, 1);
      assert.match(removed.stderr, /plugins\/deployer\/static-server\.mjs was removed since the last build/);
      const version = path.join(copy, 'core/version.ts');
      fs.writeFileSync(version, fs.readFileSync(version, 'utf8').replace(VERSION, '0.0.0-pulled'));
      fs.writeFileSync(path.join(copy, 'dist/core/leftover.js'), 'throw new Error("stale");\n');
      const stale = await check();
      assert.equal(stale.code, 1);
      assert.match(stale.stderr, /core\/version\.ts changed since the last build; run `npm run build`/);

      const launched = await run(process.execPath, ['scripts/launch.mjs', 'dist/core/cli/corectl.js', 'help'], { cwd: copy, timeoutMs: 280_000 });
      assert.equal(launched.code, 0, launched.stderr);
      assert.match(launched.stderr, /build: core\/version\.ts changed since the last build; building/);
      assert.match(launched.stdout, /usage: npm run corectl/);
      assert.match(fs.readFileSync(path.join(copy, 'dist/core/version.js'), 'utf8'), /0\.0\.0-pulled/);
      assert.ok(!fs.existsSync(path.join(copy, 'dist/core/leftover.js')));
      assert.ok(!fs.existsSync(path.join(copy, 'dist/plugins/deployer/static-server.mjs')));
      assert.equal((await check()).code, 0);
    });
  });

  describe('the systemd unit (deploy/corenode.service)', () => {
    const unit = fs.readFileSync(path.join(REPO_ROOT, 'deploy/corenode.service'), 'utf8');
    const directive = (key: string) => unit.match(new RegExp(`^${key}=(.*)$`, 'm'))?.[1].split(' ') ?? [];
    // The unit names /usr/bin/node; the tests run whichever node runs them.
    const local = (argv: string[]) => (argv[0].endsWith('/node') ? [process.execPath, ...argv.slice(1)] : argv);

    it('rebuilds a stale build first, then runs one node process on the compiled JavaScript, which SIGTERM stops with code 0', async () => {
      assert.deepEqual(directive('ExecStart'), ['/usr/bin/node', '--max-semi-space-size=2', 'dist/core/cli/node.js']);
      const [preCmd, ...preArgs] = local(directive('ExecStartPre'));
      const pre = await run(preCmd, preArgs);
      assert.equal(pre.code, 0, pre.stderr);

      const port = await freePort();
      const config = path.join(dir, 'unit.yaml');
      fs.writeFileSync(config, `api: { port: ${port}, host: 127.0.0.1 }\ndataDir: ${path.join(dir, 'unit-data')}\n`);
      const [cmd, ...args] = local(directive('ExecStart'));
      const svc = new Service(cmd, args, { CORENODE_CONFIG: config });
      try {
        await eventually(async () => {
          assert.ok(!svc.exit, svc.stderr);
          assert.equal((await get(`http://127.0.0.1:${port}/core/version`)).status, 200);
        }, 120_000, 50);
        assert.equal(processTree(svc.child.pid!).length, 1);
        svc.child.kill('SIGTERM');
        await svc.exited;
        assert.deepEqual(svc.exit, { code: 0, signal: null }, svc.stderr);
      } finally {
        svc.kill();
      }
    });
  });

  describe('at the end', () => {
    it('still answers after 65 s, longer than any timer in it, then stops cleanly on SIGTERM', async function () {
      this.timeout(MIN_RUN_MS + 60_000);
      // Requests keep coming while the timers fire (the tests above overlap most of the 65 s); each is answered.
      for (;;) {
        const res = await get(`${base}/core/version`);
        assert.equal(res.status, 200, `no answer ${Math.round((Date.now() - startedAt) / 1000)} s after start`);
        if (Date.now() - startedAt >= MIN_RUN_MS) break;
        await new Promise((r) => setTimeout(r, 1000));
      }
      assert.ok(!node.exit, `npm start exited early: ${JSON.stringify(node.exit)}\n${node.stderr}`);
      assert.deepEqual(processTree(node.child.pid!).map((p) => p.pid), pids, 'the same npm and node processes as at start');

      node.child.kill('SIGTERM');
      await eventually(() => assert.ok(node.exit), 30_000, 50);
      assert.deepEqual(node.exit, { code: 0, signal: null }, node.stderr);
      await eventually(() => assert.deepEqual(pids.filter((p) => readProc(p)), []), 10_000, 50);
      assert.match(node.stdout, /"signal":"SIGTERM","msg":"node API stopping"/);
      assert.doesNotMatch(node.stdout + node.stderr, /unhandled|"level":50|"level":60/);
    });
  });
});
