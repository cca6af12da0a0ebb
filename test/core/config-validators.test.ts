/**
 * The build's config validators (core/config-validators.ts): the standalone code validates as the compiled
 * schema does (defaults filled in alike, the same first error, worded alike by the host), and the build
 * holds one for the node's config schema and every shipped plugin's, so no shipped schema may carry a
 * default computed from where or how the code runs (the node plugin's software folder did: every start
 * then compiled it).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import { REPO_ROOT, BUILD_DIR } from '../../core/paths.ts';
import { CONFIG_VALIDATORS_FILE, configValidatorsCode, schemaKey } from '../../core/config-validators.ts';
import { createAjv, describeError } from '../../core/manifest/schema.ts';
import type { PluginDefinition } from '../../core/plugin-api.ts';
import { nodeConfigSchema } from '../../core/config.ts';

/** Standalone code evaluated as the CommonJS module the node requires (its requires resolve from the repository). */
function load(code: string): Record<string, ValidateFunction> {
  const module = { exports: {} as Record<string, ValidateFunction> };
  new Function('require', 'module', 'exports', code)(createRequire(path.join(REPO_ROOT, 'package.json')), module, module.exports);
  return module.exports;
}

/** Inputs that break each top-level key in turn: a value of another JSON type, then an unknown key. */
function wrongInputs(schema: any): unknown[] {
  const out: unknown[] = [{ notAKey: 1 }, 'not an object', []];
  for (const [key, prop] of Object.entries<any>(schema.properties ?? {})) {
    const t = Array.isArray(prop.type) ? prop.type[0] : prop.type;
    const wrong = t === 'string' ? 12345 : 'text';
    out.push({ [key]: wrong });
    if (t === 'object') out.push({ [key]: { notAKey: 1 } });
    if (t === 'integer' || t === 'number') out.push({ [key]: -1e12 }, { [key]: 1e12 }, { [key]: 1.5 });
    if (t === 'string') out.push({ [key]: '' });
  }
  return out;
}

describe('config validators from the build', () => {
  const plugins: PluginDefinition[] = [];
  before(async () => {
    for (const id of fs.readdirSync(path.join(REPO_ROOT, 'plugins')).sort()) {
      const file = path.join(REPO_ROOT, 'plugins', id, 'index.ts');
      if (!fs.existsSync(file)) continue;
      const def = (await import(file)).default as PluginDefinition;
      if (def.configSchema) plugins.push(def);
    }
    // The node's own section schema, under the host's name.
    plugins.unshift({ id: 'host', configSchema: nodeConfigSchema } as unknown as PluginDefinition);
    assert.ok(plugins.length >= 9, `only ${plugins.length} plugins with a config schema`);
  });

  it('validate as the compiled schema: the same defaults, validity and first error, for the node and every shipped plugin', () => {
    const standalone = load(configValidatorsCode(plugins.map((p) => p.configSchema!)));
    const ajv = createAjv({ useDefaults: true, verbose: true });
    let compared = 0;
    for (const p of plugins) {
      const compiled = ajv.compile(p.configSchema!);
      const built = standalone[schemaKey(p.configSchema!)];
      assert.ok(built, `${p.id}: no standalone validator`);
      for (const input of [{}, ...wrongInputs(p.configSchema)]) {
        const a = structuredClone(input);
        const b = structuredClone(input);
        const okA = compiled(a);
        const okB = built(b);
        assert.equal(okB, okA, `${p.id} ${JSON.stringify(input)}`);
        assert.deepEqual(b, a, `${p.id} ${JSON.stringify(input)}: the same defaults filled in`);
        if (!okA) assert.deepEqual(describeError(p.id, built.errors![0]), describeError(p.id, compiled.errors![0]), `${p.id} ${JSON.stringify(input)}`);
        compared++;
      }
    }
    assert.ok(compared > 100, `${compared} inputs compared`);
  });

  it('the build holds a validator for the node\'s schema and every shipped plugin\'s, as the sources make them here', () => {
    const built = createRequire(import.meta.url)(path.join(BUILD_DIR, CONFIG_VALIDATORS_FILE)) as Record<string, ValidateFunction>;
    for (const p of plugins) assert.equal(typeof built[schemaKey(p.configSchema!)], 'function', `${p.id}: its schema differs between the build and the sources`);
  });
});
