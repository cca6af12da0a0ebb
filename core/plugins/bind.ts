/**
 * Binding a set of manifests to the running plugins: each route to the handler its plugin exports, then
 * one route table. A missing handler fails the set; so does an unused one at start (later, a vendor's
 * manifest may drop a route and leave its handler idle, which is only logged).
 */
import type { Logger } from 'pino';
import { bindRoute, type BoundHandler, type BoundRoute, type ChainServices } from '../http/chain.ts';
import type { Manifest } from '../manifest/parse.ts';
import type { Handler, PluginInstance } from '../plugin-api.ts';
import type { RouteSpec } from '../manifest/parse.ts';
import { buildTable, type RouteTable } from '../http/table.ts';

export function bindManifests(
  manifests: Manifest[],
  instanceOf: (plugin: string) => PluginInstance | undefined,
  configOf: (plugin: string) => Record<string, unknown> | undefined,
  strict: boolean,
  log: Logger,
  svc: ChainServices,
): RouteTable {
  const bound: BoundRoute[] = [];
  for (const m of manifests) {
    const instance = instanceOf(m.plugin);
    const used = new Set<string>();
    for (const declared of m.routes) {
      const spec = withConfiguredPath(declared, configOf(m.plugin));
      let handler: BoundHandler | undefined;
      if (instance && spec.handler && !spec.removed) {
        handler = kindOf(instance.handlers[spec.handler]);
        if (!handler) throw new Error(`${spec.source}: route ${spec.id} names handler '${spec.handler}', which plugin ${m.plugin} does not export`);
        const wanted = spec.method === 'SSE' ? 'sse' : spec.method === 'WS' ? 'ws' : 'plain';
        if (handler.kind !== wanted)
          throw new Error(`${spec.source}: route ${spec.id} is ${spec.method === 'SSE' || spec.method === 'WS' ? `a ${spec.method} route` : 'an HTTP route'} but handler '${spec.handler}' is a ${handler.kind} handler`);
        used.add(spec.handler);
      }
      bound.push(bindRoute(spec, handler, m.schemasChecked));
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

/** A plugin's handler as the chain calls it: a plain function, or a tagged SSE or websocket handler. */
function kindOf(h: Handler | undefined): BoundHandler | undefined {
  if (typeof h === 'function') return { kind: 'plain', fn: h };
  if (h && typeof h === 'object' && typeof h.fn === 'function' && (h.kind === 'sse' || h.kind === 'ws')) return h as BoundHandler;
  return undefined;
}

/** `pathFromConfig`: the route's path is the value of that key of the plugin's config (checked as a path). */
function withConfiguredPath(spec: RouteSpec, config: Record<string, unknown> | undefined): RouteSpec {
  if (!spec.pathFromConfig || !config) return spec;
  const p = config[spec.pathFromConfig];
  if (typeof p !== 'string' || !/^(\/(?!\.\.?(\/|$))[A-Za-z0-9_.~-]+)+$/.test(p))
    throw new Error(`${spec.source}: route ${spec.id} takes its path from ${spec.plugin}.${spec.pathFromConfig}, which is not a path such as /webhook`);
  return { ...spec, path: p };
}
