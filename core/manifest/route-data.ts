/**
 * A plugin's own data on its routes (the manifest's `x` blocks, `route.meta` to its handlers) checked
 * against the schema the plugin declares (`routeData` in definePlugin), so a misspelled key is a manifest
 * error with its `file:line:column` when manifests load and in `corectl manifests validate`, never a
 * handler failing at request time.
 */
import type { PluginDefinition } from '../plugin-api.ts';
import { locateInManifest, type Manifest } from './parse.ts';
import { validatorFor } from '../built-validators.ts';

/** Without a declared schema, a plugin keeps no data on its routes. */
export const NO_ROUTE_DATA = { type: 'object', additionalProperties: false, properties: {} };

/** One `file:line:col: reason` per route whose `x` block does not fit the plugin's `routeData`. */
export function checkRouteData(m: Manifest, def: Pick<PluginDefinition, 'id' | 'routeData'>): string[] {
  const schema = def.routeData ?? NO_ROUTE_DATA;
  let validate;
  try {
    validate = validatorFor('routeData', schema);
  } catch (e) {
    return [`${m.source}: plugin ${def.id} declares a routeData schema that does not compile: ${(e as Error).message}`];
  }
  const errors: string[] = [];
  m.routes.forEach((r, i) => {
    if (!validate(r.meta)) errors.push(locateInManifest(m, ['routes', i, 'x'], validate.errors![0], 'x'));
  });
  return errors;
}
