/**
 * The build's validators (core/built-validators.ts): the standalone code validates as the compiled schema
 * does (defaults filled in alike, coerced alike, the same first error, worded alike by the host), for the
 * node's config schema, every shipped plugin's config and route data schemas and every shipped route's
 * input schemas; and the build holds each of them as the
 * sources make it, so no shipped schema may carry a default computed from where or how the code runs (the
 * node plugin's software folder did: every start then compiled it).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import { REPO_ROOT, BUILD_DIR } from '../../core/paths.ts';
import { VALIDATOR_KINDS, schemaKey, validatorOptions, validatorsCode, validatorsFile, type ValidatorKind } from '../../core/built-validators.ts';
import { createAjv, describeError } from '../../core/manifest/schema.ts';
import { routeSchemas } from '../../core/http/chain.ts';
import { repoManifestCache } from '../support/node.ts';
import type { PluginDefinition } from '../../core/plugin-api.ts';
import { nodeConfigSchema } from '../../core/config.ts';
import { NO_ROUTE_DATA } from '../../core/manifest/route-data.ts';

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
    out.push({ [key]: t === 'string' ? 12345 : 'text' });
    if (t === 'object') out.push({ [key]: { notAKey: 1 } });
    if (t === 'integer' || t === 'number') out.push({ [key]: -1e12 }, { [key]: 1e12 }, { [key]: 1.5 });
    if (t === 'string') out.push({ [key]: '' });
  }
  return out;
}

describe('validators compiled by the build', () => {
  const schemas: Record<ValidatorKind, { id: string; schema: object }[]> = {
    config: [{ id: 'host', schema: nodeConfigSchema }],
    routeData: [{ id: '(none)', schema: NO_ROUTE_DATA }],
    routeParams: [],
    routeBody: [],
    routeInput: [],
  };
  before(async () => {
    for (const id of fs.readdirSync(path.join(REPO_ROOT, 'plugins')).sort()) {
      const file = path.join(REPO_ROOT, 'plugins', id, 'index.ts');
      if (!fs.existsSync(file)) continue;
      const def = (await import(file)).default as PluginDefinition;
      if (def.configSchema) schemas.config.push({ id, schema: def.configSchema });
      if (def.routeData) schemas.routeData.push({ id, schema: def.routeData });
    }
    assert.ok(schemas.config.length >= 9, `only ${schemas.config.length} config schemas`);
    assert.ok(schemas.routeData.length >= 3, `only ${schemas.routeData.length} route data schemas`);
    for (const r of repoManifestCache().routes()) for (const s of routeSchemas(r)) schemas[s.kind].push({ id: `${r.id} ${s.what}`, schema: s.schema });
    assert.ok(schemas.routeInput.length >= 100, `only ${schemas.routeInput.length} route input schemas`);
  });

  for (const kind of VALIDATOR_KINDS) {
    it(`${kind}: validate as the compiled schema, with the same defaults, validity and first error, for every shipped schema`, () => {
      const standalone = load(validatorsCode(kind, schemas[kind].map((s) => s.schema)));
      const ajv = createAjv(validatorOptions(kind));
      let compared = 0;
      for (const { id, schema } of schemas[kind]) {
        const compiled = ajv.compile(schema);
        const built = standalone[schemaKey(schema)];
        assert.ok(built, `${id}: no standalone validator`);
        for (const input of [{}, ...wrongInputs(schema)]) {
          const a = structuredClone(input);
          const b = structuredClone(input);
          const okA = compiled(a);
          assert.equal(built(b), okA, `${id} ${JSON.stringify(input)}`);
          assert.deepEqual(b, a, `${id} ${JSON.stringify(input)}: the same defaults filled in`);
          if (!okA) assert.deepEqual(describeError(id, built.errors![0]), describeError(id, compiled.errors![0]), `${id} ${JSON.stringify(input)}`);
          compared++;
        }
      }
      assert.ok(compared > 3 * schemas[kind].length, `${compared} inputs compared`);
    });

    it(`${kind}: the build holds a validator for every shipped schema, as the sources make it here`, () => {
      const built = createRequire(import.meta.url)(path.join(BUILD_DIR, validatorsFile(kind))) as Record<string, ValidateFunction>;
      for (const { id, schema } of schemas[kind]) assert.equal(typeof built[schemaKey(schema)], 'function', `${id}: its schema differs between the build and the sources`);
    });
  }
});
