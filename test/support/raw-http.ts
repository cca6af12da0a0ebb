/**
 * One HTTP exchange over node:http, answered in the shape of `fetchAnswer`, for what fetch does not do:
 * the path goes as written (fetch resolves `..`, `%2e%2e` and `.` segments before sending), and the
 * request goes on a connection of its own (fetch's pool reuses idle connections; against a service in the
 * test's own process, a blocked event loop lets the service's keep-alive timer close such a connection
 * just as a request is sent on it).
 */
import http from 'node:http';
import type { Answer } from './node.ts';

export function rawRequest(origin: string, path: string, o: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {}): Promise<Answer> {
  const u = new URL(origin);
  const body = o.body === undefined ? undefined : Buffer.from(o.body);
  // A declared length, as fetch sends for a string body (not chunked).
  const headers = { ...o.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path, method: o.method ?? 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json: any;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) for (const x of [v ?? []].flat()) h.append(k, x);
        resolve({ status: res.statusCode ?? 0, headers: h, text, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
