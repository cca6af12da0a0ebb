/** Route handlers of manifests/peers.yaml. */
import { ApiError, type HandlerInput, type PlainHandler } from '../../core/plugin-api.ts';
import { carriesRepoauth, REPOAUTH_IS_PUBLIC } from '../apps/api.ts';
import { canonicalIp, formatAddr, parseAddr } from '../../lib/net-addr/addr.ts';
import type { DriftReport } from './clockdrift.ts';
import type { Locations } from './locations.ts';
import type { Conn } from './protocol/conn.ts';
import type { PeerNode } from './protocol/node.ts';

export interface HandlerDeps {
  net: PeerNode;
  locations: Locations;
  recent: { hash: string; type: string; origin: string; sentAt: number; hops: number; receivedAt: number; data?: unknown }[];
  ownAddr: () => string;
  /** This node's clock against its peers' (clockdrift.ts). */
  clockdrift: () => DriftReport;
}

const NO_IP = () => new ApiError(400, 'BadRequest', 'No IP address specified.');

/** `ip`, `ip:port` or `[ipv6]:port`, with this node's API port as the default port (nodes of one network share it). */
function addrOf(ip: string | undefined, port: number) {
  if (!ip) throw NO_IP();
  const withPort = parseAddr(ip);
  const bare = withPort ? null : canonicalIp(ip);
  if (!withPort && !bare) throw new ApiError(400, 'BadRequest', ip.includes(':') && !ip.includes('[') && ip.includes('.') ? `${ip} has no valid port` : `${ip} is not an IPv4 address, nor an IPv6 one`);
  const a = withPort ?? { ip: bare!, port };
  return { ip: a.ip, port: a.port, addr: formatAddr(a.ip, a.port), exact: !!withPort };
}

/** Each shortfall of the open links against `peers.minimums` (checkcommunication; the node plugin's DOS rounds). */
export function shortfalls(net: PeerNode): string[] {
  const m = net.cfg.minimums;
  const out = net.outgoing();
  const inc = net.incoming();
  const uOut = new Set(out.map((c) => c.ip)).size;
  const uIn = new Set(inc.map((c) => c.ip)).size;
  const short: string[] = [];
  if (out.length < m.outgoing) short.push(`${out.length} outgoing connections of the ${m.outgoing} needed`);
  if (uOut < m.uniqueOutgoingIps) short.push(`${uOut} unique outgoing IPs of the ${m.uniqueOutgoingIps} needed`);
  if (inc.length < m.incoming) short.push(`${inc.length} incoming connections of the ${m.incoming} needed`);
  if (uIn < m.uniqueIncomingIps) short.push(`${uIn} unique incoming IPs of the ${m.uniqueIncomingIps} needed`);
  return short;
}

function record(c: Conn, now: number, opens: Map<string, number>) {
  return {
    ip: c.ip,
    port: c.port,
    direction: c.direction,
    latency: c.latency,
    missedPongs: c.missedPongs,
    lastPingTime: c.lastPingTime,
    lastPongTime: c.lastPongTime,
    connectedAt: c.connectedAt,
    uptime: now - c.connectedAt,
    source: c.source,
    isAlive: c.missedPongs === 0,
    badMessages: c.badMessages,
    capabilities: ['gossip', 'sync'],
    remoteClockOffsetMs: c.remoteClockOffsetMs,
    lastTransmissionDelay: c.lastTransmissionDelay,
    messagesReceived: c.messagesReceived,
    messagesSent: c.messagesSent,
    bytesReceived: c.bytesReceived,
    bytesSent: c.bytesSent,
    /** Bytes waiting to be written out to the peer now, and the most there have been (cut over maxSendQueueBytes). */
    sendQueueBytes: c.link.buffered(),
    sendQueuePeak: c.sendQueuePeak,
    remoteVersion: c.remoteVersion,
    reconnects: Math.max(0, (opens.get(c.addr) ?? 1) - 1),
    nodeKey: c.key,
    /** The node-list key the peer proved (membership nodelist). */
    listedKey: c.member || null,
    /** Whether the link runs over TLS (wss, or the HTTPS listener's /ws/core). */
    tls: !!c.link.secure,
  };
}

/** The data a broadcast route carries: GET `:data` or the POST body (JSON when it parses, else text). */
function dataOf(input: HandlerInput): unknown {
  if (input.rawBody !== undefined || input.route.method === 'POST') {
    const text = (input.rawBody ?? Buffer.alloc(0)).toString('utf8').trim();
    if (!text) return undefined;
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return input.values.data || undefined;
}

export function makeHandlers(d: HandlerDeps): Record<string, PlainHandler> {
  const { net } = d;
  const find = (direction: 'outbound' | 'inbound', ip: string | undefined) => {
    const a = addrOf(ip, net.cfg.port);
    const hit = [...net.conns].filter((c) => c.direction === direction && c.state !== 'closed' && (a.exact ? c.addr === a.addr : c.ip === a.ip));
    return { a, hit };
  };
  const app = (input: HandlerInput) => {
    const name = input.values.appname;
    if (!name) throw new ApiError(400, 'BadRequest', 'No Core App specified');
    return name as string;
  };
  return {
    addpeer: async (input) => {
      const a = addrOf(input.values.ip, net.cfg.port);
      const r = await net.connect(a.addr, 'manual');
      if (r === 'initiated') return `Outgoing connection to ${a.addr} initiated`;
      if (r === 'already') return `Already connected to ${a.addr}`;
      if (r === 'self') throw new ApiError(400, 'BadRequest', `${a.addr} is this node`);
      throw new ApiError(503, 'PeerUnreachable', `Outgoing connection to ${a.addr} could not be opened`);
    },
    removepeer: (input) => {
      const { a, hit } = find('outbound', input.values.ip);
      if (!hit.length) throw new ApiError(404, 'NotFound', `No outgoing connection to ${a.exact ? a.addr : a.ip}`);
      for (const c of hit) net.drop(c, 1000, 'removed by the operator', false);
      return `Outgoing connection to ${hit.map((c) => c.addr).join(', ')} closed`;
    },
    removeincomingpeer: (input) => {
      const { a, hit } = find('inbound', input.values.ip);
      if (!hit.length) throw new ApiError(404, 'NotFound', `No incoming connection from ${a.exact ? a.addr : a.ip}`);
      for (const c of hit) net.drop(c, 1000, 'removed by the operator', false);
      return `Incoming connection from ${hit.map((c) => c.addr).join(', ')} closed`;
    },
    broadcastmessage: (input) => {
      const data = dataOf(input);
      if (data === undefined) throw new ApiError(400, 'BadRequest', 'No message to broadcast attached.');
      // The network would refuse it anyway (index.ts): say why instead of sending nothing.
      if (carriesRepoauth(data)) throw new ApiError(400, 'BadRequest', `repoauth: ${REPOAUTH_IS_PUBLIC}`);
      const only = input.route.id.includes('tooutgoing') ? 'outbound' : input.route.id.includes('toincoming') ? 'inbound' : undefined;
      // The variants start the message on one direction of links; relays carry it on to every node.
      net.broadcast('broadcastmessage', data, only);
      return 'Message successfully broadcasted to Core network';
    },
    connectedpeers: () => net.outgoing().map((c) => c.ip),
    connectedpeersinfo: () => net.outgoing().map((c) => ({ ip: c.ip, port: c.port, latency: c.latency, lastPingTime: c.lastPingTime })),
    incomingconnections: () => net.incoming().map((c) => c.ip),
    incomingconnectionsinfo: () => net.incoming().map((c) => ({ ip: c.ip, port: c.port, latency: c.latency, lastPingTime: c.lastPingTime })),
    peers: (input) => {
      const f: string | undefined = input.values.filter;
      const now = Date.now();
      return [...net.conns]
        .filter((c) => c.state === 'open' && (!f || c.direction === f || c.addr === f))
        .map((c) => record(c, now, net.opens));
    },
    topology: () => {
      const topology: Record<string, { outbound: string[]; inbound: string[] }> = {
        [d.ownAddr()]: { outbound: net.outgoing().map((c) => c.addr), inbound: net.incoming().map((c) => c.addr) },
      };
      for (const c of net.conns) if (c.state === 'open' && c.report) topology[c.addr] = c.report;
      return { reporters: Object.keys(topology).length, knownPeers: net.known.size, topology };
    },
    networkhealth: () => {
      const h = net.health;
      const last = h.at(-1);
      const steady = h.length >= 6 && h.slice(-6).every((x) => x.status === last?.status);
      const status = last?.status ?? 'starting';
      return {
        status,
        inSteadyState: steady,
        history: h.slice(-20),
        messages: { ...net.stats, recent: d.recent.slice(-50) },
      };
    },
    peerhistory: (input) => {
      const q = input.values;
      return net.history
        .filter((e) => (!q.ip || e.ip.startsWith(q.ip)) && (q.code === undefined || e.code === q.code) && (!q.event || e.event === q.event) && e.time >= q.since)
        .slice(-q.limit)
        .reverse();
    },
    unstablenodes: () => net.unstable(),
    clockdrift: () => d.clockdrift(),
    checkcommunication: () => {
      const short = shortfalls(net);
      if (short.length) throw new ApiError(503, 'NotEnoughPeers', `Not enough connections to the Core network: ${short.join('; ')}`);
      return 'Communication to Core network is properly established';
    },
    location: (input) => d.locations.locations(app(input)),
    locations: () => d.locations.locations(),
    installinglocation: (input) => d.locations.installingLocations(app(input)),
    installinglocations: () => d.locations.installingLocations(),
    installingerrorslocation: (input) => d.locations.errorLocations(app(input)),
    installingerrorslocations: () => d.locations.errorLocations(),
  };
}
