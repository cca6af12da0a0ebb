/** Node configuration: defaults, the YAML file, env overrides, and refusals naming file, key and reason. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, DEFAULT_CORE_TEAM, REPO_ROOT, loadConfig } from '../../core/config.ts';
import { tempDir } from '../support/node.ts';

describe('config', () => {
  let cwd: string;
  beforeEach(() => {
    cwd = tempDir('corenode-config-');
  });
  afterEach(() => fs.rmSync(cwd, { recursive: true, force: true }));

  const write = (name: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(cwd, name)), { recursive: true });
    fs.writeFileSync(path.join(cwd, name), text);
    return name;
  };
  const refusal = (env: NodeJS.ProcessEnv) => {
    try {
      loadConfig(env, cwd);
    } catch (e) {
      assert.ok(e instanceof ConfigError, String(e));
      return (e as Error).message;
    }
    assert.fail('the config was accepted');
  };

  it('starts on built-in defaults without a file', () => {
    const c = loadConfig({}, cwd);
    assert.equal(c.api.port, 16127);
    assert.equal(c.api.host, '0.0.0.0');
    assert.equal(c.api.tls, undefined);
    assert.equal(c.dataDir, path.join(cwd, 'data'));
    assert.equal(c.manifestsDir, path.join(REPO_ROOT, 'manifests'));
    assert.equal(c.pluginsDir, path.join(REPO_ROOT, 'plugins'));
    assert.equal(c.initial.legacyid, '');
    assert.deepEqual(c.coreTeam, DEFAULT_CORE_TEAM);
    assert.deepEqual(c.plugins, {});
    assert.equal(c.log.level, 'info');
    assert.deepEqual(c.queue, { concurrency: 2, retentionSeconds: 3600 });
    assert.equal(c.watch, true);
    assert.equal(c.source, '(defaults)');
  });

  it('reads config/node.yaml when present, and CORENODE_CONFIG names another file', () => {
    write('config/node.yaml', 'api: { port: 1111 }\n');
    assert.equal(loadConfig({}, cwd).api.port, 1111);
    write('other.yaml', 'api: { port: 2222, host: 127.0.0.1 }\ninitial: { legacyid: 1Op }\nplugins: { explorer: false }\nnode: { routerIp: 1.2.3.4 }\n');
    const c = loadConfig({ CORENODE_CONFIG: 'other.yaml' }, cwd);
    assert.equal(c.api.port, 2222);
    assert.equal(c.api.host, '127.0.0.1');
    assert.equal(c.initial.legacyid, '1Op');
    assert.deepEqual(c.plugins, { explorer: false });
    assert.deepEqual(c.node, { routerIp: '1.2.3.4' });
    assert.equal(c.source, 'other.yaml');
  });

  it('CORENODE_PORT and CORENODE_DATA_DIR override the file', () => {
    write('config/node.yaml', 'api: { port: 1111, host: 127.0.0.1 }\ndataDir: /var/lib/x\n');
    const c = loadConfig({ CORENODE_PORT: '3333', CORENODE_DATA_DIR: 'store' }, cwd);
    assert.equal(c.api.port, 3333);
    assert.equal(c.api.host, '127.0.0.1', 'the rest of api stays');
    assert.equal(c.dataDir, path.join(cwd, 'store'));
  });

  it('an empty file is the defaults', () => {
    write('config/node.yaml', '# nothing yet\n');
    assert.equal(loadConfig({}, cwd).api.port, 16127);
  });

  const refusals: [string, string, string][] = [
    ['an unknown key', 'api:\n  prot: 1\n', 'config/node.yaml:2:3: api.prot: is not a known key'],
    ['a wrong type', 'api:\n  port: high\n', 'config/node.yaml:2:9: api.port: must be integer'],
    ['a port out of range', 'api: { port: 70000 }\n', 'config/node.yaml:1:14: api.port: must be <= 65535'],
    ['half a TLS pair', 'api:\n  tls: { cert: /c.pem }\n', 'config/node.yaml:2:8: api.tls.key: is required'],
    ['a TLS port that is neither a port nor next', 'api:\n  tls: { cert: /c.pem, key: /k.pem, port: later }\n', 'config/node.yaml:2:43: api.tls.port: must be a port (0 to 65535) or next'],
    ['a plugin switch that is not a boolean', 'plugins:\n  explorer: "no"\n', 'config/node.yaml:2:13: plugins.explorer: must be boolean'],
    ['a plugin section that is not a mapping', 'daemon: 5\n', 'config/node.yaml:1:9: daemon: must be object'],
    ['a bad log level', 'log: { level: loud }\n', 'config/node.yaml:1:15: log.level: must be one of trace, debug, info, warn, error, fatal, silent'],
    ['a core team that is not a list', 'coreTeam: abc\n', 'config/node.yaml:1:11: coreTeam: must be array'],
    ['YAML syntax', 'api: { port: 1\n', 'config/node.yaml:2:1: Flow map in block collection must be sufficiently indented and end with a }'],
    ['a list at the root', '- a\n', 'config/node.yaml: (root): must be a mapping of keys'],
  ];
  for (const [what, text, message] of refusals) {
    it(`refuses ${what}, naming file, key and reason`, () => {
      write('config/node.yaml', text);
      assert.equal(refusal({}), message);
    });
  }

  it('refuses a missing CORENODE_CONFIG file and a bad CORENODE_PORT', () => {
    assert.match(refusal({ CORENODE_CONFIG: 'nope.yaml' }), /^nope\.yaml: cannot be read \(ENOENT/);
    assert.equal(refusal({ CORENODE_PORT: 'abc' }), "CORENODE_PORT: must be an integer port, got 'abc'");
    assert.equal(refusal({ CORENODE_PORT: '99999' }), "CORENODE_PORT: must be an integer port, got '99999'");
  });
});
