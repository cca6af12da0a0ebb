/**
 * One HTTP call from this node to another node's API, over HTTPS where that node offers it and plain HTTP
 * otherwise (./offers.ts decides the order and remembers what worked).
 *
 * A node's TLS certificate is usually self-signed, so it is not checked against any CA
 * (`rejectUnauthorized: false`): what a node says is trusted through the signatures it carries (node
 * keys, signed frames and messages), never through its certificate. TLS here keeps the call private on
 * the wire, as plain HTTP would not. node:https rather than fetch: Node's fetch takes no TLS options without
 * the undici package (not a dependency).
 */
import http from 'node:http';
import https from 'node:https';
import { tlsOffers, urlHost, type Attempt, type TlsOffers } from './offers.ts';

export interface NodeCall {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Each attempt (TLS, then plain) gets this long for the whole answer. */
  timeoutMs: number;
  /** The caller's own end (a stopping node, a round's deadline): no further attempt once it fires. */
  signal?: AbortSignal;
  /** Bytes of the answer kept (default 64 KB); the rest is not read. */
  maxBytes?: number;
}

export interface NodeAnswer {
  status: number;
  /** The answer's text, at most `maxBytes`. */
  text: string;
  /** Whether it came over TLS, and the URL it came from (for messages). */
  secure: boolean;
  url: string;
}

/** Errors name the URL tried last; a timeout is a `TimeoutError` (as fetch's are). */
export async function callNode(ip: string, port: number, path: string, o: NodeCall, offers: TlsOffers = tlsOffers): Promise<NodeAnswer> {
  return offers.reach(ip, port, (a) => once(ip, a, path, o), o.signal);
}

function once(ip: string, a: Attempt, path: string, o: NodeCall): Promise<NodeAnswer> {
  const url = `${a.secure ? 'https' : 'http'}://${urlHost(ip)}:${a.port}${path}`;
  const max = o.maxBytes ?? 65_536;
  return new Promise<NodeAnswer>((resolve, reject) => {
    const opts: https.RequestOptions = {
      host: ip.replace(/^\[|\]$/g, ''),
      port: a.port,
      path,
      method: o.method ?? 'GET',
      headers: { ...(o.body !== undefined ? { 'content-length': String(Buffer.byteLength(o.body)) } : {}), ...o.headers },
      agent: false,
      signal: o.signal,
      // See the file's comment: identity comes from signatures, not from the certificate.
      ...(a.secure ? { rejectUnauthorized: false } : {}),
    };
    /** Settle once with an error naming the URL; the code stays (offers.ts reads it to tell a TLS server's refusal). */
    const fail = (e: Error & { code?: string }, answered = false) => {
      clearTimeout(timer);
      if (o.signal?.aborted && e.name === 'AbortError') return reject(o.signal.reason ?? e);
      reject(Object.assign(new Error(`${url}: ${e.message}`, { cause: e }), { code: e.code, name: e.name === 'TimeoutError' ? e.name : 'Error', answered }));
      req.destroy();
    };
    const req = (a.secure ? https : http).request(opts, (res) => {
      const parts: Buffer[] = [];
      let size = 0;
      const finish = () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8').slice(0, max), secure: a.secure, url });
        req.destroy();
      };
      res.on('data', (d: Buffer) => {
        if (size >= max) return;
        parts.push(d);
        size += d.length;
        if (size >= max) finish();
      });
      res.on('end', finish);
      // The node answered and its answer broke off: no other way to it is tried.
      res.on('error', (e) => fail(e, true));
    });
    const timer = setTimeout(() => fail(Object.assign(new Error(`no answer within ${o.timeoutMs} ms`), { name: 'TimeoutError' })), o.timeoutMs);
    req.on('error', (e: Error & { code?: string }) => fail(e));
    if (o.body !== undefined) req.end(o.body);
    else req.end();
  });
}
