/**
 * The one name of the application a request acts on, decided by the host for every route whose level
 * depends on an app (appowner, appownerabove), over HTTP (chain.ts) and websockets (ws.ts) alike.
 *
 * A request may name its app in the path, the query string and (POST) the JSON body. The level check and
 * the handler once read these in different orders (the level check path, query, body; a route's merged
 * input in its own `inputFrom` order), so `?appname=mine` with `{"appname": "victim"}` passed the level on
 * the caller's app and acted on the victim's. Here every place that names the app must name the same one,
 * else the request is refused (400) before the level check; the level check gets the name decided here, and
 * the chain writes it into the handler's `values` (the one place handlers read it from).
 */
import type { Level } from '../plugin-api.ts';
import { ApiError } from './reply.ts';

export type NamePlace = 'path' | 'query' | 'body';

export const ALL_PLACES: readonly NamePlace[] = ['path', 'query', 'body'];

/** The levels whose answer depends on which app the request names (core/services/auth.ts `allows`). */
export const namesApp = (level: Level): boolean => level === 'appowner' || level === 'appownerabove';

/**
 * The app `param` names in this request, or undefined when no place the route reads names one. Given in
 * several places (read or not by the route), the values must be the same string; a name that is not a
 * string is refused too (the level check could not compare it with the handler's). `readFrom`: the places
 * the route's handler reads, first first (its `inputFrom`); the answer is taken from these only, so the
 * level is never checked on a name the handler does not see.
 */
export function decideAppName(param: string, places: Record<NamePlace, unknown>, readFrom: readonly NamePlace[] = ALL_PLACES): string | undefined {
  const given: [NamePlace, string][] = [];
  for (const place of ALL_PLACES) {
    const src = places[place];
    if (!src || typeof src !== 'object' || Array.isArray(src) || !Object.hasOwn(src, param)) continue;
    const v = (src as Record<string, unknown>)[param];
    // Not given, as the merged input counts it (input.ts): the next place may give it.
    if (v === undefined || v === null || v === '') continue;
    if (typeof v !== 'string') throw new ApiError(400, 'ValidationError', `Invalid ${place} input: ${param} must be a string`);
    given.push([place, v]);
  }
  const other = given.find(([, v]) => v !== given[0]?.[1]);
  if (other) {
    const where = given.map(([p]) => p);
    throw new ApiError(400, 'ValidationError', `${param} is given in the ${where.join(' and the ')} with different values: name the application once, or the same in every place`);
  }
  return given.find(([p]) => readFrom.includes(p))?.[1];
}
