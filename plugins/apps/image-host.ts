/**
 * Which registries an app's image may come from. The node's Docker connects to the registry a `repotag`
 * names, so a repotag naming a loopback, link-local (169.254.0.0/16, with the cloud metadata address),
 * private-range or this node's own address makes the node send requests to its own services or its
 * neighbours on an app owner's behalf (an unpaid test install did). Such registries are refused at
 * verification (the address as written) and again right before each pull (the host name resolved), unless
 * the operator allows the registry in `apps.privateRegistries`.
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import os from 'node:os';

export interface RegistryRules {
  /** Registries the operator allows although private: `host:port`, or `host` for any port of it. */
  allowed: readonly string[];
  /** Addresses of this node besides its interfaces' (its configured public address). */
  ownAddresses: readonly string[];
}

const kinds: [string, number, 'ipv4' | 'ipv6', string][] = [
  ['0.0.0.0', 8, 'ipv4', 'an unspecified address'],
  ['127.0.0.0', 8, 'ipv4', 'a loopback address'],
  ['169.254.0.0', 16, 'ipv4', 'a link-local address (cloud metadata lives there)'],
  ['10.0.0.0', 8, 'ipv4', 'a private-range address'],
  ['172.16.0.0', 12, 'ipv4', 'a private-range address'],
  ['192.168.0.0', 16, 'ipv4', 'a private-range address'],
  ['100.64.0.0', 10, 'ipv4', 'a shared (carrier NAT) address'],
  ['192.0.0.0', 24, 'ipv4', 'a reserved address'],
  ['198.18.0.0', 15, 'ipv4', 'a reserved address'],
  ['224.0.0.0', 3, 'ipv4', 'a multicast or reserved address'],
  ['::', 128, 'ipv6', 'an unspecified address'],
  ['::1', 128, 'ipv6', 'a loopback address'],
  ['fe80::', 10, 'ipv6', 'a link-local address'],
  ['fc00::', 7, 'ipv6', 'a private-range address'],
  ['ff00::', 8, 'ipv6', 'a multicast address'],
];
const lists = kinds.map(([addr, bits, type, what]) => {
  const l = new net.BlockList();
  l.addSubnet(addr, bits, type);
  return { l, what };
});

/** The registry an image reference names (`host[:port]`), or null for Docker Hub (Docker's rule). */
export function registryOf(repotag: string): { host: string; hostPort: string } | null {
  const slash = repotag.indexOf('/');
  if (slash < 0) return null;
  const first = repotag.slice(0, slash).toLowerCase();
  if (!first.includes('.') && !first.includes(':') && first !== 'localhost') return null;
  const colon = first.lastIndexOf(':');
  return { host: colon < 0 ? first : first.slice(0, colon), hostPort: first };
}

/** This node's own addresses: every interface's and the configured ones. */
function ownAddresses(rules: RegistryRules): Set<string> {
  const out = new Set(rules.ownAddresses.filter(Boolean));
  for (const list of Object.values(os.networkInterfaces())) for (const a of list ?? []) out.add(a.address.replace(/%.*$/, ''));
  return out;
}

/** Why an address may not be a registry's, or null. */
function whyAddress(address: string, own: Set<string>): string | null {
  const type = net.isIPv6(address) ? 'ipv6' : 'ipv4';
  for (const { l, what } of lists) if (l.check(address, type)) return what;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (own.has(address) || (mapped && own.has(mapped))) return "this node's own address";
  return null;
}

const allowedBy = (reg: { host: string; hostPort: string }, rules: RegistryRules) =>
  rules.allowed.some((a) => a.toLowerCase() === reg.hostPort || a.toLowerCase() === reg.host);

const refusal = (reg: { hostPort: string }, why: string) =>
  `the registry ${reg.hostPort} is ${why}; images come from public registries only, unless the operator allows this one in apps.privateRegistries`;

/**
 * At verification: why the registry of `repotag`, as written, is refused, or null. Host names are judged
 * when the image is pulled (resolved then), but for `localhost` names and numeric forms of an address
 * other than the dotted quad (`127.1`, `2130706433`, `0x7f000001`), which resolvers read as addresses.
 */
export function registryRefusal(repotag: string, rules: RegistryRules): string | null {
  const reg = registryOf(repotag);
  if (!reg || allowedBy(reg, rules)) return null;
  if (reg.host === 'localhost' || reg.host.endsWith('.localhost')) return refusal(reg, 'a loopback name');
  if (net.isIP(reg.host)) {
    const why = whyAddress(reg.host, ownAddresses(rules));
    return why ? refusal(reg, why) : null;
  }
  if (/^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+))*\.?$/i.test(reg.host)) return refusal(reg, 'an address in a numeric form other than a.b.c.d');
  return null;
}

/**
 * Right before a pull: the registry's host name resolved, every address judged (a name may point at
 * loopback, or be changed to since it was verified). Throws an Error naming the registry and the address.
 */
export async function checkRegistryBeforePull(repotag: string, rules: RegistryRules): Promise<void> {
  const written = registryRefusal(repotag, rules);
  if (written) throw new Error(`image ${repotag}: ${written}`);
  const reg = registryOf(repotag);
  if (!reg || allowedBy(reg, rules) || net.isIP(reg.host)) return;
  let addresses: { address: string }[];
  try {
    addresses = await dns.lookup(reg.host, { all: true, verbatim: true });
  } catch (e) {
    throw new Error(`image ${repotag}: the registry host ${reg.host} does not resolve (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  const own = ownAddresses(rules);
  for (const { address } of addresses) {
    const why = whyAddress(address, own);
    if (why) throw new Error(`image ${repotag}: ${refusal(reg, `named by ${reg.host}, which resolves to ${address}, ${why}`)}; refused before the pull`);
  }
}
