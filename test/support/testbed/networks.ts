/**
 * The 8-node network of the network scenarios (test/network) and `npm run bench:testbed`: two nodes behind
 * one NAT router keeping their API ports mapped through its miniupnpd, three sharing one public IP behind
 * a second router (API ports 16127, 16137, 16147, forwarded), two dual-stack nodes serving HTTPS (one on
 * its API port only, one beside HTTP on the next port), and one IPv6-only node serving HTTPS. No seeds:
 * the nodes know each other from the node list only.
 */
import { APPS_PLUGINS, registryForward } from './apps.ts';
import { QUICK_PEERS, type Testbed, type TestbedHostSpec, type TestbedOptions } from './index.ts';

export const MESH = ['pub1', 'pub2', 'v6only', 'home1', 'home2', 'sh1', 'sh2', 'sh3'];

/** What `/core/checkcommunication` asks of each node (the IPv6-only one can reach 2 others). */
export const MESH_MINIMUMS = { outgoing: 2, uniqueOutgoingIps: 2, incoming: 2, uniqueIncomingIps: 2 };

/** The mesh's testbed, with `extra` hosts beside it; the nodes are started by the caller. */
export function meshNetwork(extra: TestbedHostSpec[] = []): TestbedOptions {
  return {
    hosts: [
      { name: 'pub1', ip: 'dual', node: { tls: true } },
      { name: 'pub2', ip: 'dual', node: { tls: 'beside' } },
      { name: 'v6only', ip: 'v6', node: { tls: true } },
      { name: 'home1', behind: 'home' },
      { name: 'home2', behind: 'home' },
      { name: 'sh1', behind: 'shared' },
      { name: 'sh2', behind: 'shared' },
      { name: 'sh3', behind: 'shared' },
      ...extra,
    ],
    routers: [
      { name: 'home', upnp: true },
      { name: 'shared', forwards: [{ to: 'sh1' }, { to: 'sh2' }, { to: 'sh3' }] },
    ],
    startNodes: false,
    config: { peers: { ...QUICK_PEERS, minimums: MESH_MINIMUMS } },
  };
}

/**
 * The network of the placement scenarios (test/network/placement.test.ts) and `npm run bench:placement`:
 * five nodes with the apps (a dockerd each: call `startApps` before starting them) and file sync (each its
 * own Syncthing), three public, one without room for any app (its reserve leaves 0.1 of its 2 cores: every
 * test app asks 0.3), one behind a NAT router that runs miniupnpd (`node.upnp` on); and a host without a
 * node on the internet side, from which the apps' ports are visited. Notices every 15 s and a node gone
 * after 45 s, as the placement loop is specified (issue 34); every node's event stream on. Each node host
 * has a firewall of its own (`placementFirewalls`, loaded before the nodes start).
 */
export const PLACEMENT_NODES = ['pub1', 'pub2', 'pub3', 'small', 'home1'];

export function placementNetwork(): TestbedOptions {
  const plugins = [...APPS_PLUGINS, 'filesync'];
  const apps = (reserveCpu = 0.5) => ({ apps: { node: { tier: 'cumulus', reserve: { cpu: reserveCpu } } } });
  return {
    hosts: [
      { name: 'pub1', node: { plugins, config: apps() } },
      { name: 'pub2', node: { plugins, config: apps() } },
      { name: 'pub3', node: { plugins, config: apps() } },
      { name: 'small', node: { plugins, config: apps(1.9) } },
      { name: 'home1', behind: 'home', node: { plugins, config: apps() } },
      { name: 'visitor', node: false },
    ],
    routers: [{ name: 'home', upnp: true }],
    startNodes: false,
    hostForwards: registryForward,
    config: {
      peers: { ...QUICK_PEERS, minimums: { outgoing: 1, uniqueOutgoingIps: 1, incoming: 1, uniqueIncomingIps: 1 }, announceMs: 15_000, locationTtlMs: 45_000 },
      // The node hosts' firewalls are nft (`placementFirewalls`): an app's port answers once its node allowed it.
      node: { eventStream: true, firewall: { tool: 'nft', command: ['nft'] } },
      // Syncthing peers by address only; a 2 s follower round, so a g: primary silent for 6 s is replaced.
      filesync: { mode: 'supervise', globalDiscovery: false, relays: false, follow: { intervalMs: 2000 } },
    },
  };
}

/**
 * The firewall of each placement node's host, as an operator's would be: nothing comes in but loopback (its
 * forwarder, the registry, the daemon), replies, the node's API port and its Syncthing's (API + 2). An app's
 * port is reached only once the node allowed it (`node.firewall.tool: nft`: rules in this `inet filter`).
 */
export function placementFirewalls(tb: Testbed): void {
  for (const n of tb.nodes)
    n.host.exec(['nft', '-f', '-'], {
      input: `table inet filter {
  chain input { type filter hook input priority 0; policy drop; iif lo accept; ct state established,related accept; tcp dport { ${n.port}, ${n.port + 2} } accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
`,
    });
}
