/** CORS for browser wallets and the gateway: any origin may call, and may send `legacyidauth`. */
import type { Middleware } from 'koa';

const ALLOW_HEADERS = 'legacyidauth, zelidauth, content-type, authorization, last-event-id';
const ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS';

export function cors(): Middleware {
  return async (ctx, next) => {
    const origin = ctx.get('Origin');
    if (!origin) return next();
    ctx.set('Access-Control-Allow-Origin', origin);
    ctx.set('Vary', 'Origin');
    if (ctx.method === 'OPTIONS') {
      ctx.set('Access-Control-Allow-Methods', ALLOW_METHODS);
      ctx.set('Access-Control-Allow-Headers', ALLOW_HEADERS);
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    ctx.set('Access-Control-Expose-Headers', 'Location, Retry-After, Deprecation');
    return next();
  };
}
