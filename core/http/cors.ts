/**
 * CORS for browser wallets, the node's own UI and the gateway: only configured origins (`api.corsOrigins`)
 * may call with `legacyidauth`. Other origins, `null` included, get no CORS headers at all, so a browser
 * keeps their pages from reading answers or sending the auth header (allow-all CORS is a reference defect).
 */
import type { Context } from 'koa';

const ALLOW_HEADERS = 'legacyidauth, zelidauth, content-type, authorization, last-event-id';
const ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS';

export interface CorsPolicy {
  /** Exact origins (`https://wallet.example`), or `ui`: this node's UI (the request's host, port api.port - 1). */
  origins: string[];
  apiPort: number;
}

export function allowedOrigin(origin: string, host: string | undefined, policy: CorsPolicy): boolean {
  if (origin === 'null') return false;
  const o = origin.toLowerCase();
  for (const allowed of policy.origins) {
    if (allowed === 'ui') {
      if (host && isOwnUi(o, host, policy.apiPort)) return true;
    } else if (allowed.toLowerCase() === o) return true;
  }
  return false;
}

/** `http(s)://<the host this request named>:<api port - 1>`: the home UI served next to the API. */
function isOwnUi(origin: string, host: string, apiPort: number): boolean {
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false;
  }
  const hostname = host.replace(/:\d+$/, '').toLowerCase();
  return u.hostname === hostname && Number(u.port) === apiPort - 1;
}

/** Adds the CORS headers for an allowed cross-origin call; returns true when it answered a preflight itself. */
export function cors(ctx: Context, policy: CorsPolicy): boolean {
  const origin = ctx.req.headers.origin;
  if (!origin) return false;
  ctx.set('Vary', 'Origin');
  const allowed = allowedOrigin(origin, ctx.req.headers.host, policy);
  if (ctx.method === 'OPTIONS') {
    // A refused preflight: 204 without allow headers, which the browser reads as "no".
    if (allowed) {
      ctx.set('Access-Control-Allow-Origin', origin);
      ctx.set('Access-Control-Allow-Methods', ALLOW_METHODS);
      ctx.set('Access-Control-Allow-Headers', ALLOW_HEADERS);
      ctx.set('Access-Control-Max-Age', '600');
    }
    ctx.status = 204;
    return true;
  }
  if (!allowed) return false;
  ctx.set('Access-Control-Allow-Origin', origin);
  ctx.set('Access-Control-Expose-Headers', 'Location, Retry-After, Deprecation');
  return false;
}
