/**
 * What the contract test sends: raw HTTP requests (node:http, so paths like `/../` and `%00` go out exactly
 * as written, which fetch would normalise), bounded by a timeout, and the junk it fills routes with.
 */
import http from 'node:http';
import type { BoundRoute } from '../../core/http/chain.ts';

export interface Probe {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  why: string;
}

export interface Outcome {
  status: number;
  contentType: string;
  text: string;
  /** 'timeout' or a socket error; undefined when an answer came. */
  error?: string;
}

/** Send one request; an event stream is read only to its headers. */
export function send(base: URL, p: Probe, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = http.request(
      { host: base.hostname, port: base.port, method: p.method, path: p.path, headers: p.headers, signal: AbortSignal.timeout(timeoutMs) },
      (res) => {
        const contentType = String(res.headers['content-type'] ?? '');
        if (contentType.startsWith('text/event-stream')) {
          res.destroy();
          return resolve({ status: res.statusCode!, contentType, text: '' });
        }
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, contentType, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (e) => resolve({ status: res.statusCode!, contentType, text: '', error: e.message }));
      },
    );
    req.on('error', (e) => resolve({ status: 0, contentType: '', text: '', error: e.name === 'TimeoutError' || e.name === 'AbortError' ? 'timeout' : e.message }));
    if (p.body !== undefined) req.end(p.body);
    else req.end();
  });
}

const LONG = 'a'.repeat(10 * 1024);

/** Path segment values a caller may send in place of a parameter (already encoded for the request line). */
export const JUNK_SEGMENTS = ['%00', '..', '..%2F..%2Fetc%2Fpasswd', '%E0%A4%A', encodeURIComponent(LONG), '%27%22%3Cscript%3E', '-1', '1e309', 'null', '%20', '%F0%9F%92%A9', 'constructor', '__proto__'];

/** Query values, sent for every key the route declares and for common names. */
export const JUNK_QUERY_VALUES = ['', '%00', encodeURIComponent(LONG), '-1', 'NaN', '99999999999999999999999', 'true', '%5Bobject%20Object%5D', '%E0%A4%A', '..%2F..%2F'];
const COMMON_QUERY_KEYS = ['height', 'hash', 'txid', 'address', 'appname', 'legacyid', 'verbose', 'limit', 'n', 'blockheight', 'loginPhrase', 'filter', 'page'];

/** Bodies for POST routes, each sent as text/plain and as application/json. */
export const JUNK_BODIES: string[] = [
  '',
  'null',
  '[]',
  '"str"',
  '1e999',
  '{',
  '{"a":',
  '{"__proto__":{"polluted":1},"constructor":{"prototype":{"polluted":1}}}',
  JSON.stringify({ a: LONG }),
  JSON.stringify(LONG),
  '['.repeat(5000) + ']'.repeat(5000),
  '\u0000\u0001\u00ff',
];

/** A plain value for a parameter, so a route is also called the way a wallet would. */
const PLAIN = 'test';

function paramNames(p: string): { name: string; optional: boolean }[] {
  return [...p.matchAll(/:([A-Za-z]\w*)(\?)?/g)].map((m) => ({ name: m[1], optional: !!m[2] }));
}

/** Fill `/a/:x/:y?` with values; optional params after the first missing one are dropped. */
export function fill(p: string, value: (name: string) => string | undefined): string {
  return p.replace(/\/:([A-Za-z]\w*)(\?)?/g, (_, name: string) => {
    const v = value(name);
    return v === undefined ? '' : `/${v}`;
  });
}

/** Every probe for one route and one of its paths. */
export function probesFor(r: BoundRoute, p: string): Probe[] {
  const s = r.spec;
  const method = s.method === 'SSE' ? 'GET' : s.method;
  const params = paramNames(p);
  const out: Probe[] = [];
  const plainPath = fill(p, () => PLAIN);
  out.push({ method, path: plainPath, why: 'anonymous, plain values' });
  if (params.some((x) => x.optional)) out.push({ method, path: fill(p, () => undefined), why: 'optional params left out' });
  for (const junk of JUNK_SEGMENTS) {
    for (const { name } of params) out.push({ method, path: fill(p, (n) => (n === name ? junk : PLAIN)), why: `param ${name}=${junk.slice(0, 30)}` });
  }
  if (params.length) out.push({ method, path: plainPath.replace(/\/[^/]*$/, '/../../core/version'), why: 'raw ../ in the path' });

  const declared = typeof s.query === 'object' ? Object.keys((s.query as { properties?: object }).properties ?? {}) : [];
  const keys = s.query === false ? ['x'] : [...new Set([...declared, ...COMMON_QUERY_KEYS])];
  for (const v of JUNK_QUERY_VALUES) {
    // A 10 KB value goes to one key at a time: the request line stays under Node's 16 KB header bound.
    const targets = v.length > 1000 ? keys.slice(0, 3).map((k) => [k]) : [keys];
    for (const ks of targets) out.push({ method, path: `${plainPath}?${ks.map((k) => `${k}=${v}`).join('&')}`, why: `query ${ks.length === 1 ? ks[0] : '*'}=${v.slice(0, 30)}` });
  }
  out.push({ method, path: `${plainPath}?${keys.map((k) => `${k}=1&${k}=2&${k}[]=3&${k}[$ne]=4`).join('&')}`, why: 'repeated and bracketed keys' });

  if (method === 'POST') {
    for (const body of JUNK_BODIES) {
      for (const type of ['text/plain', 'application/json']) out.push({ method, path: plainPath, body, headers: { 'content-type': type }, why: `body ${JSON.stringify(body.slice(0, 24))} as ${type}` });
    }
    const props = Object.keys((s.body.schema as { properties?: object } | undefined)?.properties ?? {});
    for (const v of [null, -1, LONG, [], {}, '%00', '../../etc/passwd', 1e308, true]) {
      const obj = Object.fromEntries((props.length ? props : ['legacyid', 'signature', 'loginPhrase', 'appname', 'txid', 'hex']).map((k) => [k, v]));
      out.push({ method, path: plainPath, body: JSON.stringify(obj), headers: { 'content-type': 'text/plain' }, why: `fields = ${JSON.stringify(v)?.slice(0, 20)}` });
    }
    const form = '--b\r\nContent-Disposition: form-data; name="f"; filename="../../x"\r\n\r\nzz\r\n--b--\r\n';
    out.push({ method, path: plainPath, body: form, headers: { 'content-type': 'multipart/form-data; boundary=b' }, why: 'multipart body' });
  }
  out.push({ method, path: plainPath, headers: { legacyidauth: 'legacyid=1x&signature=%ZZ&loginPhrase=' + LONG.slice(0, 3000) }, why: 'malformed legacyidauth' });
  out.push({ method, path: plainPath, headers: { legacyidauth: '{"legacyid":"1x"}' }, why: 'JSON legacyidauth' });
  return out;
}
