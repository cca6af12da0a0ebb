/**
 * HEAD never runs a handler. HEAD of a GET route answers the headers its GET would start with (the
 * status of the checks that need no handler, caller or body: HTTPS only 403, gate 503, query refused 400;
 * else 200 and the route's content type), with no body. Measured before: `HEAD /id/logoutcurrentsession`
 * logged the caller out and `HEAD /id/loginphrase` issued a phrase, because HEAD ran the GET handler.
 */
import type { Context } from 'koa';
import type { BoundRoute, ChainServices } from './chain.ts';

export function answerHead(ctx: Context, r: BoundRoute, svc: ChainServices): void {
  const s = r.spec;
  ctx.status =
    s.httpsOnly && !ctx.secure ? 403
    : s.gate && !svc.gates.holds(s.gate) ? 503
    : s.query === false && ctx.querystring ? 400
    : 200;
  ctx.set('Content-Type', s.method === 'SSE' ? 'text/event-stream' : 'application/json; charset=utf-8');
  if (s.deprecated) ctx.set('Deprecation', 'true');
}
