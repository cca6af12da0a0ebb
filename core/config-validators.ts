/**
 * Config validators compiled by the build. Compiling the shipped plugins' config schemas with ajv was about
 * 160 ms of CPU at every start of a node, the node's own config schema 55-75 ms more (measured: 1.3-1.6 s
 * of CPU to the first 200 on a 2-vCPU VM), for schemas that change only with the code. So the build (scripts/build.mjs) compiles them once, with
 * the same ajv options, into ajv's standalone JavaScript in `dist/config-validators.cjs`, keyed by the
 * SHA-256 of each schema's JSON; a node running the compiled tree requires that file (about 10 ms) and
 * takes a validator from it when its schema's key is there. Any other schema (a vendor's plugin, a schema
 * whose default was computed on another machine) misses and is compiled as before: only an optimisation.
 * CommonJS, because config is validated synchronously and a CommonJS module can be required.
 */
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { ValidateFunction } from 'ajv';
import standaloneModule from 'ajv/dist/standalone/index.js';
import { BUILD_DIR, BUILT } from './paths.ts';
import { createAjv, lazyAjv } from './manifest/schema.ts';

// ajv's standalone module is CommonJS; under NodeNext its default export arrives wrapped.
const standaloneCode = ((standaloneModule as any).default ?? standaloneModule) as (ajv: ReturnType<typeof createAjv>, refs: Record<string, string>) => string;

/** Config sections are validated with their defaults filled in; `verbose` gives errors their parentSchema (errorMessage). */
const OPTIONS = { useDefaults: true, verbose: true } as const;
const compiler = lazyAjv(OPTIONS);

export const CONFIG_VALIDATORS_FILE = 'config-validators.cjs';

/** The key of a schema: the SHA-256 of its JSON (an export name, so it starts with a letter). */
export function schemaKey(schema: object): string {
  return `c${crypto.createHash('sha256').update(JSON.stringify(schema)).digest('hex')}`;
}

/** The standalone CommonJS module validating each of `schemas`, exported under its key. */
export function configValidatorsCode(schemas: object[]): string {
  const ajv = createAjv({ ...OPTIONS, code: { source: true } });
  const refs: Record<string, string> = {};
  for (const s of schemas) {
    const key = schemaKey(s);
    if (refs[key]) continue;
    ajv.addSchema(structuredClone(s), key);
    refs[key] = key;
  }
  return standaloneCode(ajv, refs);
}

let built: Record<string, ValidateFunction> | undefined;
function builtValidators(): Record<string, ValidateFunction> {
  if (built) return built;
  built = {};
  if (BUILT) {
    try {
      built = createRequire(import.meta.url)(path.join(BUILD_DIR, CONFIG_VALIDATORS_FILE));
    } catch {
      // not made (the build says why): every schema compiles
    }
  }
  return built!;
}

/** The validator of a plugin's config schema: the build's when it has this schema, else compiled (once per schema object). */
export function configValidator(schema: object): ValidateFunction {
  return builtValidators()[schemaKey(schema)] ?? compiler().compile(schema);
}
