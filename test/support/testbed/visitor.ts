/**
 * An HTTP GET made from inside one of the testbed's places (a host without a node on the internet side,
 * say), as a visitor of an app makes it: a short node process in that namespace, so the request crosses
 * the testbed's network (its routers, NAT and UPnP mappings, its cuts) and not the runner's sockets.
 * Asynchronous, unlike `place.exec`: the runner's event loop (event streams, polls) goes on meanwhile.
 */
import type { NetHost, NetRouter, TestNet } from './net.ts';

export interface Visit {
  status: number;
  body: string;
}

// It exits once it has printed: an aborted fetch leaves its connection attempt pending (undici's own
// connect timeout, 10 s), which would keep the process alive that long towards a host that drops packets.
const SCRIPT = `fetch(process.argv[1], { signal: AbortSignal.timeout(Number(process.argv[2])) })
  .then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.text() })))
  .catch((e) => console.log(JSON.stringify({ error: String(e.cause?.code ?? e.message) })))
  .finally(() => process.exit(0));`;

/** GET `url` from `from` (a place of the net, or the internet's own namespace); null when nothing answered. */
export async function visit(from: NetHost | NetRouter | TestNet['internet'], url: string, timeoutMs = 3000): Promise<Visit | null> {
  const p = from.spawn([process.execPath, '-e', SCRIPT, url, String(timeoutMs)], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  p.child.stdout!.on('data', (d) => (out += d));
  await p.exited;
  try {
    const r = JSON.parse(out.trim().split('\n').pop() ?? '');
    return typeof r.status === 'number' ? r : null;
  } catch {
    return null;
  }
}

/** `http://<address>:<port><path>`, an IPv6 address in brackets. */
export const urlOf = (address: string, port: number, path = '/') => `http://${address.includes(':') ? `[${address}]` : address}:${port}${path}`;
