/**
 * A route table: one immutable snapshot of bound routes and the router serving them. Reloads build a new
 * table and swap it in one assignment; a request keeps the table it started with.
 */
import Router from '@koa/router';
import { match, type MatchFunction } from 'path-to-regexp';
import type { Middleware } from 'koa';
import { compileChain, type BoundRoute, type ChainServices } from './chain.ts';
import { toRouterPath, type Manifest } from './manifest.ts';

export interface WsRoute {
  match: MatchFunction<Record<string, string>>;
  route: BoundRoute;
}

export interface RouteTable {
  manifests: Manifest[];
  routes: BoundRoute[];
  middleware: Middleware;
  ws: WsRoute[];
  builtAt: number;
  /** Requests being served on this table; a replaced table's plugins are disposed once it drains. */
  active: number;
  onIdle?: () => void;
}

/** Resolves when no request is being served on `table`, or after `maxMs` (event streams may never end). */
export function drained(table: RouteTable, maxMs: number): Promise<void> {
  if (table.active === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, maxMs);
    timer.unref();
    function done() {
      clearTimeout(timer);
      table.onIdle = undefined;
      resolve();
    }
    table.onIdle = done;
  });
}

export function buildTable(manifests: Manifest[], routes: BoundRoute[], svc: ChainServices): RouteTable {
  const router = new Router();
  const ws: WsRoute[] = [];
  const seen = new Map<string, string>();
  for (const r of routes) {
    const verb = r.spec.method === 'SSE' ? 'GET' : r.spec.method;
    for (const p of [r.spec.path, ...r.spec.aliases]) {
      // Parameter names do not tell routes apart: /a/:x and /a/:y are the same route.
      const key = `${verb} ${p.replace(/:[A-Za-z]\w*/g, ':')}`;
      const other = seen.get(key);
      if (other) throw new Error(`${r.spec.source}: ${verb} ${p} of ${r.spec.id} is already served by ${other}`);
      seen.set(key, r.spec.id);
      if (verb === 'WS') ws.push({ match: match(toRouterPath(p), { decode: decodeURIComponent }), route: r });
      else router.register(toRouterPath(p), [verb], compileChain(r, svc) as any);
    }
  }
  return { manifests, routes, middleware: router.routes() as unknown as Middleware, ws, builtAt: Date.now(), active: 0 };
}
