/**
 * Node addresses as the network writes them: `1.2.3.4:16127` and `[2001:db8::1]:16127` (an IPv6 host is
 * bracketed whenever a port follows), and the address groups that keep a node's links spread out.
 */
import net from 'node:net';

/** The canonical form of an IP (IPv6 lower-case and compressed; an IPv4-mapped IPv6 as its IPv4), or null. */
export function canonicalIp(ip: string): string | null {
  const bare = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  if (net.isIPv4(bare)) return bare.split('.').map(Number).join('.');
  if (!net.isIPv6(bare) || bare.includes('%')) return null;
  const host = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host);
  if (mapped) return mapped[1];
  // The URL parser writes a mapped IPv4 in hex (::ffff:a00:1).
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (hex) {
    const [a, b] = [parseInt(hex[1], 16), parseInt(hex[2], 16)];
    return [a >> 8, a & 255, b >> 8, b & 255].join('.');
  }
  return host;
}

export const isIpv6 = (ip: string) => ip.includes(':');

/** `ip:port` with brackets around an IPv6 host. */
export const formatAddr = (ip: string, port: number) => (isIpv6(ip) ? `[${ip}]:${port}` : `${ip}:${port}`);

/** A URL's host part for an IP. */
export const urlHost = (ip: string) => (isIpv6(ip) ? `[${ip}]` : ip);

/** `ip:port` or `[ipv6]:port`, canonical, or null. */
export function parseAddr(s: unknown): { ip: string; port: number } | null {
  if (typeof s !== 'string' || s.length > 60) return null;
  const m = /^\[([^\]]+)\]:(\d{1,5})$/.exec(s) ?? /^([0-9.]+):(\d{1,5})$/.exec(s);
  if (!m) return null;
  const ip = canonicalIp(m[1]);
  const port = Number(m[2]);
  if (!ip || port < 1 || port > 65535) return null;
  if (s.startsWith('[') !== isIpv6(ip)) return null;
  return { ip, port };
}

/**
 * A node list entry's address (`ip`, `ip:port`, `[v6]:port` or a bare IPv6), with `defaultPort` when it
 * names none; null when it is none of these.
 */
export function parseListed(s: unknown, defaultPort: number): { ip: string; port: number } | null {
  if (typeof s !== 'string') return null;
  const withPort = parseAddr(s);
  if (withPort) return withPort;
  const ip = canonicalIp(s);
  return ip ? { ip, port: defaultPort } : null;
}

/** The host part of a node list `ip` (`1.2.3.4`, `1.2.3.4:16137`, `[v6]:16127` or a bare IPv6), canonical when it parses. */
export function hostOf(s: string): string {
  return parseListed(s, 1)?.ip ?? s;
}

/**
 * The address group an IP belongs to: its /16 for IPv4, its /32 for IPv6 (as Bitcoin Core groups peers).
 * One operator or provider usually holds whole groups, so a node spreads its outgoing links over as many
 * groups as it can: an attacker holding one range cannot fill them.
 */
export function groupOf(ip: string): string {
  if (!isIpv6(ip)) return ip.split('.').slice(0, 2).join('.');
  const full = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const parts = full.split('::');
  const head = parts[0] ? parts[0].split(':') : [];
  const tail = parts.length > 1 && parts[1] ? parts[1].split(':') : [];
  const groups = [...head, ...Array(8 - head.length - tail.length).fill('0'), ...tail];
  return `${groups[0]}:${groups[1]}::/32`;
}
