/** One place that builds ajv instances, so manifests, config and routes validate alike. */
import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, Options } from 'ajv';

/**
 * ajv is loaded with the first instance made, not with this module: a node on the compiled tree validates
 * its config, route data and route input with the build's standalone validators (core/built-validators.ts),
 * so it loads ajv's compiler (about 80 ms of CPU) only for a schema the build did not see (a vendor's).
 */
function ajvModules(): { Ajv: new (o: Options) => Ajv; addFormats: (ajv: Ajv) => Ajv } {
  const require = createRequire(import.meta.url);
  const ajv = require('ajv');
  const formats = require('ajv-formats');
  // Both are CommonJS with their export also under `default`.
  return { Ajv: ajv.Ajv ?? ajv.default, addFormats: formats.default ?? formats };
}

export function createAjv(opts: Options = {}): Ajv {
  const { Ajv, addFormats } = ajvModules();
  const ajv = new Ajv({ allErrors: false, strict: false, ...opts });
  addFormats(ajv);
  for (const k of HOST_KEYWORDS) ajv.addKeyword(k);
  return ajv;
}

/**
 * An ajv instance made on first use: each costs about 20 ms of CPU to make (its formats and meta-schema),
 * and eight made at module load delayed the node's listener by about 150 ms (measured).
 */
export function lazyAjv(opts: Options = {}): () => Ajv {
  let ajv: Ajv | undefined;
  return () => (ajv ??= createAjv(opts));
}

/**
 * Keywords the host adds to route input schemas (manifest `input:`). They carry no validation of their own:
 * the host reads them when it compiles a route's input (core/http/input.ts).
 *   coerce: list   a string is a comma-separated list, or a JSON array when it starts with `[`
 *   coerce: json   a string is JSON text (an object or array given in a path segment or query string)
 *   coerce: flag   true/false/1/0 (as text or JSON) become the integers 1/0 (daemons that read flags as ints)
 *   errorMessage   the message for any failure of this property, after its name ("limit must be ...")
 */
export const HOST_KEYWORDS = [
  { keyword: 'coerce', schemaType: 'string' as const, metaSchema: { enum: ['list', 'json', 'flag'] } },
  { keyword: 'errorMessage', schemaType: 'string' as const },
];

/**
 * Route schemas compile in ajv's strict mode: an unknown keyword (a misspelled `maxLenght`) is an error,
 * not a constraint silently dropped. Type-combination warnings stay off (they would only log).
 */
export const STRICT_SCHEMAS: Options = { strict: true, strictTypes: false, strictTuples: false, strictRequired: false };

/** `a.b.c: reason` for the first error; instancePath `/a/b/0` becomes `a.b[0]`. */
export function describeError(prefix: string, e: ErrorObject): { path: string[]; text: string } {
  const path = e.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'additionalProperties') path.push(String((e.params as any).additionalProperty));
  if (e.keyword === 'required') path.push(String((e.params as any).missingProperty));
  const key = path.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), prefix);
  // A schema may word its own refusal (`errorMessage`), read when ajv runs with `verbose`.
  const own = (e.parentSchema as { errorMessage?: unknown } | undefined)?.errorMessage;
  const reason =
    typeof own === 'string' && !['required', 'additionalProperties'].includes(e.keyword) ? own
    : e.keyword === 'additionalProperties' ? 'is not a known key'
    : e.keyword === 'required' ? 'is required'
    : e.keyword === 'enum' ? `must be one of ${(e.params as any).allowedValues.join(', ')}`
    : e.message ?? 'is invalid';
  return { path, text: `${key || '(root)'}: ${reason}` };
}
