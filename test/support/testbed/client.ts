/**
 * The test client of a testbed node: `clientAt` (test/support/node.ts) for HTTP; for HTTPS the same calls
 * over node:https trusting the testbed's own certificate (fetch takes no CA of its own on Node 20).
 */
import https from 'node:https';
import { clientAt, type Answer, type Client } from '../node.ts';

export function clientFor(url: string, ca?: string): Client {
  if (!url.startsWith('https:')) return clientAt(url);
  const request = (method: string, p: string, init: RequestInit = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const body = init.body as string | Uint8Array | undefined;
      const req = https.request(url + p, { method, ca, headers: init.headers as Record<string, string> | undefined, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
          resolve({ status: res.statusCode!, headers, text, json });
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  return {
    url,
    request,
    get: (p, headers) => request('GET', p, { headers }),
    post: (p, body, headers) =>
      request('POST', p, {
        body: typeof body === 'string' || body instanceof Uint8Array ? (body as any) : JSON.stringify(body),
        headers: { 'content-type': 'text/plain', ...headers },
      }),
  };
}
