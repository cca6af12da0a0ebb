/** `npm run corectl`: plugin switches, manifest validation, diff and route table, run as a child process. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { tempDir, type TestNode } from '../support/node.ts';
import { FIXTURE_MANIFESTS, FIXTURE_PLUGINS, buildFixturePluginIntoDist, eventually, manifestsDir, startFixtureNode } from '../support/fixture.ts';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function corectl(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      // As it ships, from dist/ on plain node (0.3 s of CPU a run, 1.5 s through tsx): the fixture plugin
      // these runs validate is built into dist/ beside it (before, below).
      [path.join(REPO_ROOT, 'dist/core/cli/corectl.js'), ...args],
      { cwd: REPO_ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const FIXTURE = fs.readFileSync(path.join(FIXTURE_MANIFESTS, 'fixture.yaml'), 'utf8');

describe('corectl', function () {
  this.timeout(60_000);
  let dir: string;
  let manifests: string;
  let env: Record<string, string>;
  before(() => {
    buildFixturePluginIntoDist();
    dir = tempDir('corenode-corectl-');
    manifests = manifestsDir(['host', path.join(FIXTURE_MANIFESTS, 'fixture.yaml')]);
    const config = path.join(dir, 'node.yaml');
    fs.writeFileSync(config, `dataDir: ${dir}/data\nmanifestsDir: ${manifests}\npluginsDir: ${FIXTURE_PLUGINS}\nplugins: { fixture: true }\n`);
    env = { CORENODE_CONFIG: config };
  });
  after(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(manifests, { recursive: true, force: true });
  });

  describe('usage', () => {
    it('prints help, and refuses unknown commands with exit code 2', async () => {
      const help = await corectl(['help'], env);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /plugins list/);
      assert.equal((await corectl([], env)).code, 2);
      const bad = await corectl(['plugins', 'frobnicate'], env);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /unknown command: plugins frobnicate/);
    });

    it('refuses a bad node config with file, key and reason', async () => {
      const bad = path.join(dir, 'bad.yaml');
      fs.writeFileSync(bad, 'api: { prot: 1 }\n');
      const res = await corectl(['plugins', 'list'], { CORENODE_CONFIG: bad });
      assert.equal(res.code, 1);
      assert.match(res.stderr, /bad\.yaml:1:8: api\.prot: is not a known key/);
    });
  });

  describe('plugins', () => {
    let node: TestNode;
    before(async () => {
      node = await startFixtureNode({ watch: true, dataDir: path.join(dir, 'data'), manifestsDir: manifests });
    });
    after(() => node.close({ keepData: true }));

    it('list: each plugin, its state and who set it', async () => {
      const res = await corectl(['plugins', 'list'], env);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^PLUGIN\s+STATE\s+SET BY\s+MANIFEST\s+ROUTES$/m);
      assert.match(res.stdout, /^fixture\s+enabled\s+config\s+fixture\.yaml\s+26$/m);
      assert.match(res.stdout, /^host\s+enabled\s+built in\s+host\.yaml\s+3$/m);
    });

    it('disable: writes the state file; the running node answers an error naming the plugin at once', async () => {
      const res = await corectl(['plugins', 'disable', 'fixture'], env);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /fixture disabled \(written to .*plugins\.json/);
      assert.match(res.stdout, /the state file takes precedence/);
      assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, 'data', 'plugins.json'), 'utf8')), { fixture: false });
      await eventually(async () => (await node.get('/fixture/echo')).json.data.name === 'PluginDisabled');
      assert.match((await node.get('/fixture/echo')).json.data.message, /The fixture plugin is disabled/);
      const list = await corectl(['plugins', 'list', '--json'], env);
      assert.deepEqual(JSON.parse(list.stdout).find((p: { plugin: string }) => p.plugin === 'fixture'), {
        plugin: 'fixture',
        enabled: false,
        source: 'state file',
        manifest: 'fixture.yaml',
        routes: 26,
      });
    });

    it('enable: the node serves the plugin again', async () => {
      const res = await corectl(['plugins', 'enable', 'fixture'], env);
      assert.equal(res.code, 0, res.stderr);
      await eventually(async () => (await node.get('/fixture/echo')).json.status === 'success');
    });

    it('refuses unknown plugins and the host itself', async () => {
      const unknown = await corectl(['plugins', 'disable', 'nosuch'], env);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /unknown plugin 'nosuch' \(known: fixture, host\)/);
      const host = await corectl(['plugins', 'disable', 'host'], env);
      assert.equal(host.code, 1);
      assert.match(host.stderr, /part of the host/);
      const missing = await corectl(['plugins', 'enable'], env);
      assert.equal(missing.code, 2);
    });
  });

  describe('manifests', () => {
    let work: string;
    beforeEach(() => {
      work = tempDir('corenode-vendor-');
    });
    afterEach(() => fs.rmSync(work, { recursive: true, force: true }));
    const put = (name: string, text: string) => {
      fs.writeFileSync(path.join(work, name), text);
      return path.join(work, name);
    };

    it('validate: the node folder by default, and named files or folders', async () => {
      const res = await corectl(['manifests', 'validate'], env);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(res.stdout.trim(), 'ok: 2 manifest(s), 29 route(s)');
      const file = await corectl(['manifests', 'validate', path.join(FIXTURE_MANIFESTS, 'fixture.yaml')], env);
      assert.equal(file.code, 0, file.stderr);
    });

    it('validate: reports every bad file as file:line:col and exits 1', async () => {
      const a = put('a.yaml', 'format: 1\nplugin: fixture\nversion: 1.0.0\nroutes:\n  - { id: fixture.a, path: /a, handler: echo }\n');
      const b = put('b.yaml', 'format: 1\nplugin: host\nversion: 1.0.0\nroutes:\n  - id: host.b\n    path: /b\n    handler: x\n    level: public\n    bogus: 1\n');
      const res = await corectl(['manifests', 'validate', work], env);
      assert.equal(res.code, 1);
      assert.ok(res.stderr.includes(`${a}:5:5: route fixture.a states no level (and defaults give none)`), res.stderr);
      assert.ok(res.stderr.includes(`${b}:9:5: routes[0].bogus: is not a known key`), res.stderr);
      assert.match(res.stderr, /2 error\(s\) in 2 file\(s\)/);
    });

    it('validate: finds conflicts across files and manifests without a plugin', async () => {
      put('fixture.yaml', FIXTURE);
      put('other.yaml', 'format: 1\nplugin: fixture\nversion: 1.0.0\nroutes: []\n');
      put('ghost.yaml', 'format: 1\nplugin: ghost\nversion: 1.0.0\nprefix: /fixture\nroutes:\n  - { id: ghost.x, path: /typed/:count, handler: x, level: public }\n');
      const res = await corectl(['manifests', 'validate', work], env);
      assert.equal(res.code, 1);
      assert.match(res.stderr, /other\.yaml:2:9: plugin fixture already has a manifest/);
      assert.match(res.stderr, /ghost\.yaml:2:9: no plugin ghost/);
      assert.match(res.stderr, /GET \/fixture\/typed\/:(count|n) of (ghost\.x|fixture\.typed) is already served by (fixture\.typed|ghost\.x)/);
    });

    it('diff: shows added, removed and changed routes with what changed', async () => {
      const changed = FIXTURE.replace('  - { id: fixture.crash, path: /crash, handler: crash }\n', '')
        .replace('{ id: fixture.user, path: /level/user, handler: whoami, level: user }', '{ id: fixture.user, path: /level/member, handler: whoami, level: admin }')
        .replace('routes:\n', 'routes:\n  - { id: fixture.brandnew, method: POST, path: /new, handler: echo, body: { parser: raw-json } }\n');
      const file = put('fixture.yaml', changed);
      const res = await corectl(['manifests', 'diff', file], env);
      assert.equal(res.code, 0, res.stderr);
      assert.equal(
        res.stdout,
        [
          '- fixture.crash  GET /fixture/crash  (no longer routed)',
          '~ fixture.user  GET /fixture/level/member',
          '    path: /fixture/level/user -> /fixture/level/member',
          '    aliases: ["/fx/level/user"] -> ["/fx/level/member"]',
          '    level: user -> admin',
          '+ fixture.brandnew  POST /fixture/new  level public  handler echo',
          '1 added, 1 removed, 1 changed',
          '',
        ].join('\n'),
      );
      const json = JSON.parse((await corectl(['manifests', 'diff', file, '--json'], env)).stdout);
      assert.deepEqual(json.map((c: { id: string; kind: string }) => `${c.kind} ${c.id}`), ['removed fixture.crash', 'changed fixture.user', 'added fixture.brandnew']);
    });

    it('diff: a folder is a whole new set; an identical set changes nothing', async () => {
      put('fixture.yaml', FIXTURE);
      const res = await corectl(['manifests', 'diff', work], env);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^- host\.openapi /m, 'host.yaml is not in the proposed folder');
      fs.copyFileSync(path.join(manifests, 'host.yaml'), path.join(work, 'host.yaml'));
      assert.equal((await corectl(['manifests', 'diff', work], env)).stdout, 'no route changes\n');
    });

    it('diff: an invalid proposal exits 1 and says the node would keep its routes', async () => {
      const file = put('fixture.yaml', FIXTURE.replace('level: user }', 'level: superuser }'));
      const res = await corectl(['manifests', 'diff', file], env);
      assert.equal(res.code, 1);
      assert.match(res.stderr, /fixture\.yaml:\d+:\d+: routes\[\d+\]\.level: must be one of/);
      assert.match(res.stderr, /would keep its current routes/);
    });

    it('routes: the table of method, path, level, plugin and handler, aliases included', async () => {
      const res = await corectl(['manifests', 'routes'], env);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^METHOD\s+PATH\s+LEVEL\s+PLUGIN\s+HANDLER\s+FLAGS$/m);
      assert.match(res.stdout, /^GET\s+\/fixture\/echo\/:a\?\/:b\?\s+public\s+fixture\s+echo$/m);
      assert.match(res.stdout, /^GET\s+\/fx\/echo\/:a\?\/:b\?\s+public\s+fixture\s+echo\s+alias$/m);
      assert.match(res.stdout, /^POST\s+\/fixture\/job\s+user\s+fixture\s+job\s+operation$/m);
      assert.match(res.stdout, /^GET\s+\/fixture\/old\s+public\s+fixture\s+-\s+removed$/m);
      const json = JSON.parse((await corectl(['manifests', 'routes', '--json'], env)).stdout);
      assert.deepEqual(json.find((r: { id: string }) => r.id === 'fixture.admin'), {
        id: 'fixture.admin',
        method: 'GET',
        path: '/fixture/level/admin',
        level: 'admin',
        plugin: 'fixture',
        handler: 'whoami',
        listener: 'api',
        alias: false,
      });
    });
  });
});
