/**
 * Binding a set of manifests to the running plugins: each route to the handler its plugin exports, then
 * one route table. A missing handler fails the set; so does an unused one at start (later, a vendor's
 * manifest may drop a route and leave its handler idle, which is only logged).
 */
import type { Logger } from 'pino';
import { bindRoute, type BoundRoute, type ChainServices } from '../http/chain.ts';
import type { Manifest } from '../manifest/parse.ts';
import type { Handler, PluginInstance } from '../plugin-api.ts';
import { buildTable, type RouteTable } from '../http/table.ts';

export function bindManifests(
  manifests: Manifest[],
  instanceOf: (plugin: string) => PluginInstance | undefined,
  strict: boolean,
  log: Logger,
  svc: ChainServices,
): RouteTable {
  const bound: BoundRoute[] = [];
  for (const m of manifests) {
    const instance = instanceOf(m.plugin);
    const used = new Set<string>();
    for (const spec of m.routes) {
      let handler: Handler | undefined;
      if (instance && spec.handler && !spec.removed) {
        handler = instance.handlers[spec.handler] as Handler | undefined;
        if (typeof handler !== 'function') throw new Error(`${spec.source}: route ${spec.id} names handler '${spec.handler}', which plugin ${m.plugin} does not export`);
        used.add(spec.handler);
      }
      bound.push(bindRoute(spec, handler));
    }
    const unused = instance ? Object.keys(instance.handlers).filter((h) => !used.has(h)) : [];
    if (unused.length) {
      const msg = `${m.source}: plugin ${m.plugin} exports handler(s) no route uses: ${unused.join(', ')}`;
      if (strict) throw new Error(msg);
      log.warn(msg);
    }
  }
  return buildTable(manifests, bound, svc);
}
