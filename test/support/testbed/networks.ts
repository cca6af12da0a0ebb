/**
 * The 8-node network of the network scenarios (test/network) and `npm run bench:testbed`: two nodes behind
 * one NAT router keeping their API ports mapped through its miniupnpd, three sharing one public IP behind
 * a second router (API ports 16127, 16137, 16147, forwarded), two dual-stack nodes serving HTTPS (one on
 * its API port only, one beside HTTP on the next port), and one IPv6-only node serving HTTPS. No seeds:
 * the nodes know each other from the node list only.
 */
import { QUICK_PEERS, type TestbedHostSpec, type TestbedOptions } from './index.ts';

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
