/**
 * HTTP over kept-alive node:http connections, from a chosen client address: every 127.0.0.0/8 address
 * reaches a node listening on 127.0.0.1, so one machine can play a real user (127.0.0.1) and an attacker
 * with many addresses (127.0.1.x) at once. Also the client of latency benchmarks: measured against the same
 * node and route (`/core/version`, 3,000 sequential requests, quiet 2-core VM), undici's `fetch` gave p50
 * 0.41-0.50 ms and p99 4.3 ms, node:http on one kept-alive connection 0.14 ms and 2.0-2.3 ms; a benchmark
 * of the server's latency measures its client too.
 */
import http from 'node:http';
import { eventually as waitEventually } from './wait.ts';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: any;
  text: string;
}

export class Client {
  private readonly agent: http.Agent;

  constructor(
    private readonly base: string,
    readonly address = '127.0.0.1',
    sockets = 8,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  }

  request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
    const url = new URL(path, this.base);
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname + url.search,
          method,
          agent: this.agent,
          localAddress: this.address,
          headers: { ...(data !== undefined ? { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(data) } : {}), ...headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: any;
            try {
              json = JSON.parse(text);
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, json, text });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(data);
    });
  }

  get(path: string, headers?: Record<string, string>) {
    return this.request('GET', path, undefined, headers);
  }

  post(path: string, body: unknown, headers?: Record<string, string>) {
    return this.request('POST', path, body, headers);
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Run `fn` over `items` with at most `width` at a time; results in order. */
export async function pool<T, R>(items: readonly T[], width: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}

/**
 * `count` attacker addresses 127.1.1.1, 127.1.2.1, ... (never 127.0.x.x, where tests put their real users);
 * `from` skips that many, so tests sharing a node use addresses of their own.
 */
export const attackerAddresses = (count: number, from = 0) =>
  Array.from({ length: count }, (_, k) => {
    const i = k + from;
    return `127.${1 + Math.floor(i / 250)}.${(i % 250) + 1}.1`;
  });

/** `eventually` of ./wait.ts, with the argument order the identity tests use: what is awaited, then at most `ms`. */
export const eventually = <T>(check: () => T | Promise<T>, what: string, ms = 20_000) => waitEventually(check, { what, timeoutMs: ms, everyMs: 25 });
