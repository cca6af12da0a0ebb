/**
 * A plugin's own data on its routes (the manifest's `x` blocks, `route.meta` to its handlers) checked
 * against the schema the plugin declares (`routeData` in definePlugin), so a misspelled key is a manifest
 * error with its `file:line:column` when manifests load and in `corectl manifests validate`, never a
 * handler failing at request time.
 */
import type { ValidateFunction } from 'ajv';
import type { PluginDefinition } from '../plugin-api.ts';
import { locateInManifest, type Manifest } from './parse.ts';
import { STRICT_SCHEMAS, lazyAjv } from './schema.ts';

const ajv = lazyAjv({ ...STRICT_SCHEMAS, verbose: true });
/** Without a declared schema, a plugin keeps no data on its routes. */
const NONE = { type: 'object', additionalProperties: false, properties: {} };
const compiled = new WeakMap<object, ValidateFunction>();

/** One `file:line:col: reason` per route whose `x` block does not fit the plugin's `routeData`. */
export function checkRouteData(m: Manifest, def: Pick<PluginDefinition, 'id' | 'routeData'>): string[] {
  const schema = def.routeData ?? NONE;
  let validate = compiled.get(schema);
  if (!validate) {
    try {
      validate = ajv().compile(schema);
    } catch (e) {
      return [`${m.source}: plugin ${def.id} declares a routeData schema that does not compile: ${(e as Error).message}`];
    }
    compiled.set(schema, validate);
  }
  const errors: string[] = [];
  m.routes.forEach((r, i) => {
    if (!validate(r.meta)) errors.push(locateInManifest(m, ['routes', i, 'x'], validate.errors![0], 'x'));
  });
  return errors;
}
