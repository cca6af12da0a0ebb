/** One place that builds ajv instances, so manifests, config and routes validate alike. */
import { Ajv, type ErrorObject, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = ((addFormatsModule as any).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

export function createAjv(opts: Options = {}): Ajv {
  const ajv = new Ajv({ allErrors: false, strict: false, ...opts });
  addFormats(ajv);
  return ajv;
}

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
