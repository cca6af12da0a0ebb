/**
 * Remote archives (restore type `remote`, `/backup/getremotefilesize`): http(s) only, and every address the
 * node connects to must be public. The check sits in the socket's DNS lookup, so the address checked is the
 * address connected to (no rebinding between check and connect), and it runs again for every redirect hop.
 * Refused: loopback, private, carrier-grade NAT, link-local (cloud metadata 169.254.169.254 included),
 * unspecified, multicast, reserved and documentation ranges, unique-local and IPv4-mapped forms of them.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { Readable } from 'node:stream';
import { ApiError } from '../../core/plugin-api.ts';

const V4_BLOCKED: [string, number][] = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
];

const v4num = (a: string) => a.split('.').reduce((n, o) => n * 256 + Number(o), 0);

function v4Public(a: string): boolean {
  const n = v4num(a);
  return !V4_BLOCKED.some(([base, bits]) => Math.floor(n / 2 ** (32 - bits)) === Math.floor(v4num(base) / 2 ** (32 - bits)));
}

/** The 8 16-bit groups of an IPv6 address. */
function v6groups(a: string): number[] {
  let s = a.toLowerCase().split('%')[0];
  const v4 = s.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (v4) {
    const n = v4num(v4[1]);
    s = s.slice(0, -v4[1].length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = s.includes('::') ? s.split('::') : [s, undefined];
  const h = head ? head.split(':') : [];
  const t = tail !== undefined && tail ? tail.split(':') : [];
  const fill = tail !== undefined ? Array(8 - h.length - t.length).fill('0') : [];
  return [...h, ...fill, ...t].map((x) => parseInt(x || '0', 16));
}

function v6Public(a: string): boolean {
  const g = v6groups(a);
  if (g.length !== 8 || g.some((x) => Number.isNaN(x))) return false;
  if (g.every((x) => x === 0)) return false; // ::
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return false; // ::1
  const v4 = `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}`;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return v4Public(v4); // ::ffff:a.b.c.d
  if (g.slice(0, 6).every((x) => x === 0)) return false; // ::a.b.c.d (deprecated compatible)
  if (g[0] === 0x64 && g[1] === 0xff9b) return v4Public(v4); // NAT64
  if ((g[0] & 0xfe00) === 0xfc00) return false; // unique local fc00::/7 (fd00:ec2::254 metadata)
  if ((g[0] & 0xffc0) === 0xfe80 || (g[0] & 0xffc0) === 0xfec0) return false; // link-local, site-local
  if ((g[0] & 0xff00) === 0xff00) return false; // multicast
  if (g[0] === 0x2001 && g[1] === 0x0db8) return false; // documentation
  if (g[0] === 0x0100 && g[1] === 0 && g[2] === 0 && g[3] === 0) return false; // discard-only
  if (g[0] === 0x2002) return v4Public(`${g[1] >> 8}.${g[1] & 255}.${g[2] >> 8}.${g[2] & 255}`); // 6to4
  return true;
}

export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return v4Public(address);
  if (family === 6) return v6Public(address);
  return false;
}

export class AddressRefused extends ApiError {
  constructor(message: string) {
    super(403, 'AddressRefused', message);
  }
}

/** A DNS lookup that answers only public addresses (every address the name has must be public). */
const publicLookup: net.LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return (callback as any)(err);
    const list = addresses as dns.LookupAddress[];
    const bad = list.find((a) => !isPublicAddress(a.address));
    if (!list.length || bad) return (callback as any)(new AddressRefused(`${hostname} resolves to ${bad?.address ?? 'nothing'}, which is not a public address`));
    if ((options as dns.LookupOptions).all) return (callback as any)(null, list);
    (callback as any)(null, list[0].address, list[0].family);
  });
};

export function parseRemoteUrl(value: unknown): URL {
  if (typeof value !== 'string' || value.length > 2048) throw ApiError.badRequest('fileurl must be an http(s) URL of at most 2048 characters');
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw ApiError.badRequest('fileurl is not a URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw ApiError.badRequest('fileurl must use http or https');
  if (u.username || u.password) throw ApiError.badRequest('fileurl must not carry credentials');
  // A literal address never goes through the lookup: check it here.
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) && !isPublicAddress(host)) throw new AddressRefused(`${host} is not a public address`);
  return u;
}

export interface RemoteAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Readable;
  url: URL;
}

/** One request to a public address, following at most `maxRedirects` redirects (each hop checked). */
export async function remoteRequest(url: URL, method: 'GET' | 'HEAD', opts: { timeoutMs?: number; maxRedirects?: number; signal?: AbortSignal } = {}): Promise<RemoteAnswer> {
  let current = url;
  for (let hop = 0; ; hop++) {
    const res = await once(current, method, opts.timeoutMs ?? 30_000, opts.signal);
    if (res.status >= 300 && res.status < 400 && res.headers.location) {
      res.body.resume();
      if (hop >= (opts.maxRedirects ?? 5)) throw new ApiError(502, 'TooManyRedirects', 'The remote file redirects too often');
      current = parseRemoteUrl(new URL(res.headers.location, current).toString());
      continue;
    }
    return res;
  }
}

function once(url: URL, method: string, timeoutMs: number, signal?: AbortSignal): Promise<RemoteAnswer> {
  const lib = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const literal = net.isIP(url.hostname.replace(/^\[|\]$/g, ''));
    const req = lib.request(url, { method, lookup: literal ? undefined : publicLookup, timeout: timeoutMs, signal, headers: { 'user-agent': 'corenode-volumes' } }, (res) =>
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res, url }),
    );
    req.on('timeout', () => req.destroy(new ApiError(504, 'RemoteTimeout', 'The remote server did not answer in time')));
    req.on('error', (e) => reject(e instanceof ApiError ? e : new ApiError(502, 'RemoteUnreachable', `The remote file could not be fetched: ${(e as NodeJS.ErrnoException).code ?? e.message}`)));
    req.end();
  });
}
