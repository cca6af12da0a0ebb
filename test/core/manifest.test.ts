/** Manifest errors name `file:line:column` and the reason, at load and at host start. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseManifest, loadManifestDir } from '../../core/manifest/parse.ts';
import { startNode, tempDir } from '../support/node.ts';
import { FIXTURE_MANIFESTS, FIXTURE_PLUGINS, REPO_MANIFESTS, manifestsDir } from '../support/fixture.ts';

const HEAD = 'format: 1\nplugin: fixture\nversion: 1.0.0\n';

function errorOf(text: string): string {
  try {
    parseManifest(text, 'vendor/fixture.yaml');
  } catch (e) {
    return (e as Error).message;
  }
  assert.fail('the manifest was accepted');
}

describe('manifest errors', () => {
  const cases: [string, string, string][] = [
    ['YAML syntax', HEAD + 'routes:\n  - { id: fixture.a, path: /a\n', 'vendor/fixture.yaml:6:1: Flow map in block collection must be sufficiently indented and end with a }'],
    ['bad indentation', HEAD + 'routes:\n  - id: fixture.a\n   path: /a\n', 'vendor/fixture.yaml:6:1: Sequence item without - indicator'],
    ['duplicate key', HEAD + 'routes:\n  - id: fixture.a\n    id: fixture.b\n', 'vendor/fixture.yaml:6:5: Map keys must be unique'],
    ['unknown route key', HEAD + 'routes:\n  - id: fixture.a\n    path: /a\n    handler: echo\n    level: public\n    levle: user\n', 'vendor/fixture.yaml:9:5: routes[0].levle: is not a known key'],
    ['unknown top key', HEAD + 'routs: []\nroutes: []\n', 'vendor/fixture.yaml:4:1: routs: is not a known key'],
    ['missing level', HEAD + 'routes:\n  - id: fixture.a\n    path: /a\n    handler: echo\n', 'vendor/fixture.yaml:5:5: route fixture.a states no level (and defaults give none)'],
    ['unknown level', HEAD + 'routes:\n  - id: fixture.a\n    path: /a\n    handler: echo\n    level: root\n', 'vendor/fixture.yaml:8:12: routes[0].level: must be one of public, user, coreteam, admin, adminandcoreteam, appowner, appownerabove'],
    ['bad handler name', HEAD + 'routes:\n  - id: fixture.a\n    path: /a\n    handler: not-a-name\n    level: public\n', 'vendor/fixture.yaml:7:14: routes[0].handler: must match pattern "^[A-Za-z_][A-Za-z0-9_]*$"'],
    ['no handler', HEAD + 'routes:\n  - id: fixture.a\n    path: /a\n    level: public\n', 'vendor/fixture.yaml:5:5: route fixture.a names no handler'],
    ['bad path', HEAD + 'routes:\n  - id: fixture.a\n    path: a b\n    handler: echo\n    level: public\n', 'vendor/fixture.yaml:6:11: routes[0].path: must match pattern "^(/[A-Za-z0-9_.~-]*(:[A-Za-z][A-Za-z0-9_]*\\??)?)+$"'],
    ['bad query', HEAD + 'routes:\n  - id: fixture.a\n    path: /a\n    handler: echo\n    level: public\n    query: 5\n', 'vendor/fixture.yaml:9:12: routes[0].query: must be true or false or a JSON Schema object'],
    ['bad size', HEAD + 'defaults: { level: public }\nroutes:\n  - { id: fixture.a, method: POST, path: /a, handler: echo, body: { parser: raw, limit: 10 parsecs } }\n', "vendor/fixture.yaml:6:89: routes[0].body.limit: must be an integer or a size such as '64kb'"],
    ['body on GET', HEAD + 'routes:\n  - id: fixture.a\n    path: /a\n    handler: echo\n    level: public\n    body: { parser: json }\n', 'vendor/fixture.yaml:5:5: route fixture.a: only POST routes take a body'],
    ['upload operation', HEAD + 'defaults: { level: user }\nroutes:\n  - { id: fixture.a, method: POST, path: /a, handler: x, operation: true, body: { parser: multipart } }\n', 'vendor/fixture.yaml:6:5: route fixture.a: an operation cannot take a multipart body'],
    ['duplicate id', HEAD + 'defaults: { level: public }\nroutes:\n  - { id: fixture.a, path: /a, handler: echo }\n  - { id: fixture.a, path: /b, handler: echo }\n', 'vendor/fixture.yaml:7:5: route id fixture.a is used twice'],
    ['foreign id', HEAD + 'defaults: { level: public }\nroutes:\n  - { id: other.a, path: /a, handler: echo }\n', "vendor/fixture.yaml:6:5: route id other.a must start with 'fixture.'"],
    ['unknown shared schema', HEAD + 'defaults: { level: public }\nroutes:\n  - { id: fixture.a, path: /a, handler: echo, query: { $ref: "#/schemas/nope" } }\n', 'vendor/fixture.yaml:6:5: unknown shared schema #/schemas/nope'],
    ['missing format', 'plugin: fixture\nversion: 1.0.0\nroutes: []\n', 'vendor/fixture.yaml:1:1: format: is required'],
    ['not a mapping', '- a\n', 'vendor/fixture.yaml:1:1: (root): must be object'],
  ];
  for (const [kind, text, message] of cases) {
    it(`${kind}`, () => assert.equal(errorOf(text), message));
  }

  it('a folder load fails on its first bad file, naming it', () => {
    const dir = manifestsDir(['host']);
    fs.writeFileSync(path.join(dir, 'zz.yaml'), HEAD + 'routes: 5\n');
    try {
      assert.throws(() => loadManifestDir(dir), (e: Error) => e.message.endsWith('zz.yaml:4:9: routes: must be array'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('every manifest shipped in manifests/ is valid', () => {
    assert.ok(loadManifestDir(REPO_MANIFESTS).length >= 2);
  });
});

describe('manifest errors at host start', () => {
  /** Start a fixture node whose fixture.yaml is `edit(original)`; returns the start error. */
  async function startError(edit: (text: string) => string, extra: Record<string, string> = {}): Promise<{ message: string; file: string }> {
    const dir = manifestsDir(['host']);
    const file = path.join(dir, 'fixture.yaml');
    fs.writeFileSync(file, edit(fs.readFileSync(path.join(FIXTURE_MANIFESTS, 'fixture.yaml'), 'utf8')));
    for (const [name, text] of Object.entries(extra)) fs.writeFileSync(path.join(dir, name), text);
    try {
      const node = await startNode({ manifestsDir: dir, config: { pluginsDir: FIXTURE_PLUGINS } });
      await node.close();
      assert.fail('the node started');
    } catch (e) {
      return { message: (e as Error).message, file };
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }

  it('a route naming a handler the plugin does not export', async () => {
    const { message, file } = await startError((t) => t.replace('handler: rawLength', 'handler: nosuch'));
    assert.match(message, new RegExp(`^${escape(file)}:\\d+:5: route fixture.raw names handler 'nosuch', which plugin fixture does not export$`));
  });

  it('a handler no route uses (at start)', async () => {
    const { message, file } = await startError((t) => t.replace(/\n  - \{ id: fixture.crash.*\}/, ''));
    assert.equal(message, `${file}:4:9: plugin fixture exports handler(s) no route uses: crash`);
  });

  it('two routes on the same method and path', async () => {
    const { message } = await startError((t) => t.replace('path: /noquery', 'path: /deprecated'));
    assert.match(message, /fixture\.yaml:\d+:5: GET \/fixture\/deprecated of fixture\.deprecated is already served by fixture\.noquery$/);
  });

  it('a manifest for a plugin that does not exist', async () => {
    const { message } = await startError((t) => t, { 'ghost.yaml': 'format: 1\nplugin: ghost\nversion: 1.0.0\nroutes: []\n' });
    assert.match(message, /ghost\.yaml:2:9: no plugin ghost \(expected .*ghost\/index\.ts\)$/);
  });

  it('a route schema that does not compile', async () => {
    const { message } = await startError((t) => t.replace('{ type: integer, minimum: 1 }', '{ type: integr }'));
    assert.match(message, /fixture\.yaml:\d+:5: params schema of fixture\.typed does not compile/);
  });

  it('a plugin whose setup fails, and a plugin module that does not load', async () => {
    const dir = tempDir();
    const manifests = manifestsDir(['host', path.join(FIXTURE_MANIFESTS, 'fixture.yaml')]);
    try {
      await assert.rejects(
        startNode({ dataDir: dir, manifestsDir: manifests, config: { pluginsDir: FIXTURE_PLUGINS, fixture: { failSetup: true } } }),
        { message: 'the fixture was told to fail (plugin fixture failed to set up)' },
      );
      const plugins = tempDir();
      fs.mkdirSync(path.join(plugins, 'fixture'));
      fs.writeFileSync(path.join(plugins, 'fixture', 'index.ts'), 'export default {;\n');
      await assert.rejects(startNode({ dataDir: dir, manifestsDir: manifests, config: { pluginsDir: plugins } }), (e: Error) =>
        /fixture\.yaml:4:9: plugin fixture could not be loaded from .*index\.ts: /.test(e.message),
      );
      fs.rmSync(plugins, { recursive: true, force: true });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(manifests, { recursive: true, force: true });
    }
  });

  it('a bad config section of a plugin', async () => {
    const dir = tempDir();
    try {
      await startNode({ dataDir: dir, manifestsDir: manifestsDir(['host', path.join(FIXTURE_MANIFESTS, 'fixture.yaml')]), config: { pluginsDir: FIXTURE_PLUGINS, fixture: { appOwner: 5 } } });
      assert.fail('the node started');
    } catch (e) {
      assert.equal((e as Error).message, 'test config: fixture.appOwner: must be string');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

function escape(s: string) {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
