/**
 * What the node answers for the web interface: the index page (never cached: it names the current
 * build's files) and the assets (cached for a year: their names change with their content), each with the
 * headers that keep the page to this node (Content-Security-Policy) and out of other sites' frames.
 */
import type { BuiltUi } from './assets.ts';

export interface Answer {
  status: number;
  body: Buffer | string;
  headers: Record<string, string>;
}

/** Where the page's API calls go when it is served on another port than the API's (the UI port). */
export interface ApiOrigin {
  port: number;
  tls: boolean;
}

/** A Host header as it may appear in the policy; anything else (a forged header) falls back to 'self' only. */
const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

function hostName(host: string): string {
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
}

/**
 * Only this node: scripts, styles, images and fonts from 'self', API calls and websockets to this host
 * (and, on the UI port, to the API port of the same host), no plugins, no frames, no <base> tricks.
 * CSP 'self' does not cover ws: in every browser, so the websocket origins are named.
 */
export function contentSecurityPolicy(host: string | undefined, api?: ApiOrigin): string {
  const connect = ["'self'"];
  if (host && HOST.test(host)) {
    connect.push(`ws://${host}`, `wss://${host}`);
    if (api) {
      const h = `${hostName(host)}:${api.port}`;
      connect.push(`${api.tls ? 'https' : 'http'}://${h}`, `${api.tls ? 'wss' : 'ws'}://${h}`);
    }
  }
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    "font-src 'self'",
    `connect-src ${connect.join(' ')}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const COMMON = { 'X-Content-Type-Options': 'nosniff', 'Referrer-Policy': 'no-referrer', 'X-Frame-Options': 'DENY' };

const escapeAttr = (s: string) => s.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The HTML shell: the build's CSS and JS, and the API's origin when the page is served elsewhere. */
export function indexHtml(ui: BuiltUi | null, api?: ApiOrigin): string {
  const head = [
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    '<title>corenode</title>',
    ...(api ? [`<meta name="corenode-api" content="${escapeAttr(`${api.tls ? 'https' : 'http'}:${api.port}`)}">`] : []),
    '<link rel="icon" href="/ui/assets/icon.svg">',
    ...(ui?.css ?? []).map((f) => `<link rel="stylesheet" href="/ui/assets/${escapeAttr(f)}">`),
    ...(ui?.js ?? []).map((f) => `<script type="module" src="/ui/assets/${escapeAttr(f)}"></script>`),
    ...(ui?.preload ?? []).map((f) => `<link rel="modulepreload" href="/ui/assets/${escapeAttr(f)}">`),
  ];
  const body = ui
    ? '<div id="app"><p class="boot">Loading the node\'s web interface…</p></div><noscript>This page needs JavaScript. The node\'s API answers JSON at /core/version and the other routes.</noscript>'
    : '<main><h1>The web interface is not built</h1><p>Run <code>npm run build</code> (or <code>npm ci</code>) in the node\'s folder.</p></main>';
  return `<!doctype html>\n<html lang="en"><head>${head.join('')}</head><body>${body}</body></html>\n`;
}

export function indexAnswer(ui: BuiltUi | null, host: string | undefined, api?: ApiOrigin): Answer {
  return {
    status: 200,
    body: indexHtml(ui, api),
    headers: { ...COMMON, 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store', 'Content-Security-Policy': contentSecurityPolicy(host, api) },
  };
}

/** An asset by name; gzip when the client takes it. Unknown names answer 404 (an old page after an update). */
export function assetAnswer(ui: BuiltUi | null, name: string, acceptEncoding: string | undefined): Answer {
  const a = ui?.assets.get(name);
  if (!a) return { status: 404, body: 'Not Found\n', headers: { ...COMMON, 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' } };
  const gz = a.gzip && /\bgzip\b/.test(acceptEncoding ?? '');
  return {
    status: 200,
    body: gz ? a.gzip! : a.body,
    headers: {
      ...COMMON,
      'Content-Type': a.type,
      'Cache-Control': 'public, max-age=31536000, immutable',
      Vary: 'Accept-Encoding',
      ...(gz ? { 'Content-Encoding': 'gzip' } : {}),
    },
  };
}
