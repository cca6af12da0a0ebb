/**
 * Per-address limits for anonymous callers. An address is the client's IPv4 address, or the /64 prefix of
 * its IPv6 address (one host usually holds a whole /64, so counting single IPv6 addresses would let one
 * machine look like 2^64 callers).
 */
import net from 'node:net';

/** The key an address is counted under: IPv4 (also IPv4-mapped IPv6) as is, IPv6 by its first 64 bits. */
export function addressKey(ip: string | undefined): string {
  if (!ip) return '?';
  if (ip.startsWith('::ffff:') && net.isIPv4(ip.slice(7))) return ip.slice(7);
  if (!net.isIPv6(ip)) return ip;
  const [head, tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  return groups.slice(0, 4).map((g) => (parseInt(g, 16) || 0).toString(16)).join(':') + '::/64';
}

/**
 * At most `limit` events per key in a fixed window of `windowMs` from the key's first event. The table of
 * keys is bounded too (`maxKeys`): past it the key whose window started first is forgotten, which only
 * resets that key's count (a flood from more addresses than that cannot grow memory).
 */
export class WindowLimiter {
  private readonly keys = new Map<string, { since: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys: number,
    private readonly now: () => number,
  ) {}

  /** Counts one event for `key`; false (and nothing counted) when the key is at its limit. */
  take(key: string): boolean {
    const now = this.now();
    let e = this.keys.get(key);
    if (e && now - e.since >= this.windowMs) {
      // A new window: re-inserted so the Map stays ordered by window start (the oldest is evicted first).
      this.keys.delete(key);
      e = undefined;
    }
    if (!e) {
      while (this.keys.size >= this.maxKeys) this.keys.delete(this.keys.keys().next().value as string);
      e = { since: now, count: 0 };
      this.keys.set(key, e);
    }
    if (e.count >= this.limit) return false;
    e.count++;
    return true;
  }

  /** Drop the windows that are over (the Map is in window order, so this stops at the first live one). */
  sweep(): void {
    const now = this.now();
    for (const [k, e] of this.keys) {
      if (now - e.since < this.windowMs) break;
      this.keys.delete(k);
    }
  }

  get size(): number {
    return this.keys.size;
  }
}
