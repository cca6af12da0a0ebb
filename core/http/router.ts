/**
 * Route lookup in near-constant time for a node's few hundred routes. @koa/router tests every route's
 * regular expression on every request; here a static path is one Map lookup, and a path with parameters
 * is tried only against the routes sharing its first static segments.
 *
 * Matching follows @koa/router's defaults (case-insensitive, optional trailing slash, parameters decoded,
 * malformed percent-encoding left as sent). Precedence: an exact static path first, then routes with the
 * longer static prefix (two segments, one, none), then manifest order.
 */
import { match, type MatchFunction } from 'path-to-regexp';
import { toRouterPath } from '../manifest/parse.ts';

export interface Found<T> {
  value: T;
  params: Record<string, string>;
}

/** The params of a static route (shared, frozen: the chain copies before handing params on). */
export const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>;

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** First `n` segments of a path, lower-cased: `/Daemon/getBlock/5` -> `/daemon/getblock`. */
function prefix(segments: string[], n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += '/' + segments[i];
  return out.toLowerCase();
}

export class RouteMatcher<T> {
  private readonly statics = new Map<string, T>();
  private readonly buckets = new Map<string, { fn: MatchFunction<Record<string, string>>; value: T }[]>();

  /** `path` in manifest syntax (`/a/:x/:y?`); `method` any label (GET, POST, WS...). */
  add(method: string, path: string, value: T): void {
    const segments = path.split('/').slice(1);
    const firstParam = segments.findIndex((s) => s.includes(':'));
    if (firstParam === -1) {
      const key = `${method} ${path.toLowerCase().replace(/\/$/, '') || '/'}`;
      if (!this.statics.has(key)) this.statics.set(key, value);
      return;
    }
    const key = `${method} ${prefix(segments, Math.min(2, firstParam))}`;
    const list = this.buckets.get(key) ?? [];
    list.push({ fn: match(toRouterPath(path), { decode: safeDecode }), value });
    this.buckets.set(key, list);
  }

  find(method: string, path: string): Found<T> | undefined {
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const hit = this.statics.get(`${method} ${trimmed.toLowerCase()}`);
    if (hit !== undefined) return { value: hit, params: NO_PARAMS };
    if (this.buckets.size === 0) return undefined;
    const segments = trimmed.split('/').slice(1);
    for (let depth = Math.min(2, segments.length); depth >= 0; depth--) {
      const list = this.buckets.get(`${method} ${prefix(segments, depth)}`);
      if (!list) continue;
      for (const r of list) {
        const m = r.fn(path);
        if (m) return { value: r.value, params: m.params };
      }
    }
    return undefined;
  }
}
