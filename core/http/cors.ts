/** CORS for browser wallets and the gateway: any origin may call, and may send `legacyidauth`. */
import type { Context } from 'koa';

const ALLOW_HEADERS = 'legacyidauth, zelidauth, content-type, authorization, last-event-id';
const ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS';

/**
 * Adds the CORS headers for a cross-origin call; returns true when it answered a preflight itself.
 * Auth travels in a header, never a cookie, so no credentials are allowed and any origin is safe.
 */
export function cors(ctx: Context): boolean {
  const origin = ctx.req.headers.origin;
  if (!origin) return false;
  ctx.set('Access-Control-Allow-Origin', origin);
  ctx.set('Vary', 'Origin');
  if (ctx.method === 'OPTIONS') {
    ctx.set('Access-Control-Allow-Methods', ALLOW_METHODS);
    ctx.set('Access-Control-Allow-Headers', ALLOW_HEADERS);
    ctx.set('Access-Control-Max-Age', '600');
    ctx.status = 204;
    return true;
  }
  ctx.set('Access-Control-Expose-Headers', 'Location, Retry-After, Deprecation');
  return false;
}
