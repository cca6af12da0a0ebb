/**
 * A route table: one immutable snapshot of bound routes and the router serving them. Reloads build a new
 * table and swap it in one assignment; a request keeps the table it started with.
 */
import type { Context } from 'koa';
import { compileChain, type BoundRoute, type ChainServices, type InFlight } from './chain.ts';
import type { Manifest } from '../manifest/parse.ts';
import { RouteMatcher } from './router.ts';

/** `active` counts requests being served on this table; a replaced table's plugins are disposed once it drains. */
export interface RouteTable extends InFlight {
  manifests: Manifest[];
  routes: BoundRoute[];
  /** Serves the request if a route matches, else hands it to `fallback` (404). */
  middleware: (ctx: Context, fallback: (ctx: Context) => unknown) => unknown;
  ws: RouteMatcher<BoundRoute>;
}

/** Resolves when no request is being served on `table`, or after `maxMs` (event streams may never end). */
export function drained(table: RouteTable, maxMs: number): Promise<void> {
  if (table.active === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, maxMs);
    timer.unref();
    const previous = table.onIdle; // another waiter (a reload and a shutdown may wait on one table)
    table.onIdle = () => {
      table.onIdle = previous;
      previous?.();
      clearTimeout(timer);
      resolve();
    };
  });
}

export function buildTable(manifests: Manifest[], routes: BoundRoute[], svc: ChainServices): RouteTable {
  const http = new RouteMatcher<(ctx: Context) => Promise<void>>();
  const ws = new RouteMatcher<BoundRoute>();
  const table: RouteTable = { manifests, routes, middleware: () => undefined, ws, active: 0 };
  const seen = new Map<string, string>();
  for (const r of routes) {
    const verb = r.spec.method === 'SSE' ? 'GET' : r.spec.method;
    const serve = verb === 'WS' ? undefined : compileChain(r, svc, table);
    for (const p of [r.spec.path, ...r.spec.aliases]) {
      // Parameter names do not tell routes apart: /a/:x and /a/:y are the same route.
      const key = `${verb} ${p.toLowerCase().replace(/:[a-z]\w*/g, ':')}`;
      const other = seen.get(key);
      if (other) throw new Error(`${r.spec.source}: ${verb} ${p} of ${r.spec.id} is already served by ${other}`);
      seen.set(key, r.spec.id);
      if (serve) http.add(verb, p, serve);
      else ws.add('WS', p, r);
    }
  }
  table.middleware = (ctx, fallback) => {
    const found = http.find(ctx.method === 'HEAD' ? 'GET' : ctx.method, ctx.path);
    if (!found) return fallback(ctx);
    ctx.params = found.params;
    return found.value(ctx);
  };
  return table;
}
