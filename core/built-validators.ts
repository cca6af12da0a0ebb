/**
 * Validators compiled by the build, for schemas that change only with the code. At every start a node
 * compiled the shipped plugins' config schemas (about 160 ms of CPU), its own config schema (55-75 ms) and
 * the plugins' route data schemas (about 70 ms with the ajv instance they needed), measured against 1.3-1.6 s
 * of CPU to the first 200 on a 2-vCPU VM; then, at their first requests, the routes' input schemas, with
 * three ajv instances of 50-80 ms each. So the build (scripts/build.mjs) compiles them once, with the same
 * ajv options, into ajv's standalone JavaScript, one CommonJS file per kind in dist/, each validator keyed
 * by the SHA-256 of its schema's JSON; a node running the compiled tree requires that file (about 10 ms)
 * and takes a validator from it when its schema's key is there. Any other schema (a vendor's plugin, a
 * schema whose default was computed on another machine) misses and is compiled as before: only an
 * optimisation. CommonJS, because config is validated synchronously and a CommonJS module can be required.
 */
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Ajv, Options, ValidateFunction } from 'ajv';
import { BUILD_DIR, BUILT } from './paths.ts';
import { STRICT_SCHEMAS, createAjv, lazyAjv } from './manifest/schema.ts';

const KINDS = {
  // Config sections get their defaults filled in; `verbose` gives errors their parentSchema (errorMessage).
  config: { file: 'config-validators.cjs', options: { useDefaults: true, verbose: true } as Options },
  // A plugin's data on its routes (core/manifest/route-data.ts), strict: an unknown keyword is an error.
  routeData: { file: 'route-data-validators.cjs', options: { ...STRICT_SCHEMAS, verbose: true } as Options },
  // Route input (core/http/chain.ts): path parameters and query strings as ajv coerces them, JSON bodies,
  // and the merged input (input.ts: the host converts strings itself; keys not declared are dropped).
  routeParams: { file: 'route-params-validators.cjs', options: { ...STRICT_SCHEMAS, coerceTypes: true, useDefaults: true } as Options },
  routeBody: { file: 'route-body-validators.cjs', options: { ...STRICT_SCHEMAS, useDefaults: true } as Options },
  routeInput: { file: 'route-input-validators.cjs', options: { ...STRICT_SCHEMAS, useDefaults: true, removeAdditional: 'all' } as Options },
};
export type ValidatorKind = keyof typeof KINDS;
export const VALIDATOR_KINDS = Object.keys(KINDS) as ValidatorKind[];
export const validatorsFile = (kind: ValidatorKind) => KINDS[kind].file;
export const validatorOptions = (kind: ValidatorKind): Options => KINDS[kind].options;

const compilers = Object.fromEntries(VALIDATOR_KINDS.map((k) => [k, lazyAjv(KINDS[k].options)])) as Record<ValidatorKind, () => Ajv>;

/** The key of a schema: the SHA-256 of its JSON (an export name, so it starts with a letter). */
export function schemaKey(schema: object): string {
  return `c${crypto.createHash('sha256').update(JSON.stringify(schema)).digest('hex')}`;
}

/** The standalone CommonJS module validating each of `schemas` as `kind`, exported under its key. */
export function validatorsCode(kind: ValidatorKind, schemas: object[]): string {
  // Only the build makes code: ajv's code generator is not loaded by a node.
  const mod = createRequire(import.meta.url)('ajv/dist/standalone/index.js');
  const standaloneCode = (mod.default ?? mod) as (ajv: ReturnType<typeof createAjv>, refs: Record<string, string>) => string;
  const ajv = createAjv({ ...KINDS[kind].options, code: { source: true } });
  const refs: Record<string, string> = {};
  for (const s of schemas) {
    const key = schemaKey(s);
    if (refs[key]) continue;
    ajv.addSchema(structuredClone(s), key);
    refs[key] = key;
  }
  return standaloneCode(ajv, refs);
}

const built: Partial<Record<ValidatorKind, Record<string, ValidateFunction>>> = {};
function builtValidators(kind: ValidatorKind): Record<string, ValidateFunction> {
  let v = built[kind];
  if (v) return v;
  v = {};
  if (BUILT) {
    try {
      v = createRequire(import.meta.url)(path.join(BUILD_DIR, KINDS[kind].file)) as Record<string, ValidateFunction>;
    } catch {
      // not made (the build says why): every schema compiles
    }
  }
  return (built[kind] = v);
}

const found = Object.fromEntries(VALIDATOR_KINDS.map((k) => [k, new WeakMap<object, ValidateFunction>()])) as Record<ValidatorKind, WeakMap<object, ValidateFunction>>;

/**
 * The validator of `schema` as `kind`: the build's when it has this schema, else compiled. Kept per schema
 * object, so a schema checked again (a plugin's config or route data at every reload) is not hashed again.
 * Compiling throws on a schema that does not compile.
 */
export function validatorFor(kind: ValidatorKind, schema: object): ValidateFunction {
  let v = found[kind].get(schema);
  if (!v) found[kind].set(schema, (v = builtValidators(kind)[schemaKey(schema)] ?? compilers[kind]().compile(schema)));
  return v;
}
