/** The protocol's tunables; the plugin's `peers:` config section maps onto these (README: config keys). */
export interface ProtocolConfig {
  /** This node's address as peers reach it. */
  ip: string;
  port: number;
  /** The port this node serves HTTPS on, told to peers in the hello (0 or absent: none). */
  tlsPort?: number;
  /** `ip` was not configured: take the address most peers say they see this node connect from. */
  autoIp?: boolean;
  /** `ip:port` of nodes to connect to first. */
  seeds: string[];
  /** Outgoing peers kept (reference: 8). */
  maxOutgoing: number;
  /** Incoming peers accepted at most (assumed 40 when not set; the reference's own cap is not shown). */
  maxIncoming: number;
  pingMs: number;
  /** Unanswered pings in a row that close a link. */
  maxMissedPongs: number;
  /** How often the node tops up its outgoing peers and samples its health. */
  maintainMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** An address whose node refused this one (not listed, banned), or that this node refused, is dialled again after this. */
  refusedRetryMs: number;
  /** While incoming links are short, ask other nodes to dial this one at most this often. */
  dialBackMs: number;
  handshakeMs: number;
  /** A text frame over this is dropped and counted (the host's websocket limit, 64 KB, closes the link). */
  maxFrameBytes: number;
  textPerSecond: number;
  textBurst: number;
  binaryPerSecond: number;
  binaryBurst: number;
  /**
   * Bytes a link may have waiting to be written out to its peer. A peer that does not read what it asked
   * for is cut over it and counted as one sending bad frames (closed 4010, its IP refused for `banMs`).
   * A catch-up answer is sent in parts of at most a quarter of this, the next part when the peer asks.
   */
  maxSendQueueBytes: number;
  /** Bad frames a link may send before it is closed and its IP refused for `banMs`. */
  maxBadFrames: number;
  banMs: number;
  hopLimit: number;
  seenTtlMs: number;
  seenMax: number;
  /** Broadcast messages kept for catch-up. */
  keepMs: number;
  keepMax: number;
  /** A message stamped further than this in the future is refused. */
  maxClockSkewMs: number;
  unstableDisconnects: number;
  unstableWindowMs: number;
  minimums: { outgoing: number; uniqueOutgoingIps: number; incoming: number; uniqueIncomingIps: number };
}

export const DEFAULTS: Omit<ProtocolConfig, 'ip' | 'port' | 'seeds'> = {
  maxOutgoing: 8,
  maxIncoming: 40,
  pingMs: 30_000,
  maxMissedPongs: 3,
  maintainMs: 5_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
  // The node list is re-read every minute; a refused node dialled every 60 s at most made 1 refusal a
  // minute per node that still lists it. Five minutes: a node listed meanwhile is retried at once anyway.
  refusedRetryMs: 300_000,
  // The reference asks for dial-backs every few minutes while short of incoming links; 30 s gets a new
  // node its incoming links within its first minute on the network.
  dialBackMs: 30_000,
  handshakeMs: 10_000,
  maxFrameBytes: 60_000,
  textPerSecond: 200,
  textBurst: 400,
  binaryPerSecond: 5,
  binaryBurst: 10,
  // A peer that asked and does not read held its answers in the node's memory: 2,580 sync requests at
  // 150/s took a node from 114 to 455 MB of RSS. Links that read queued at most 8.6 KB (the 8-node
  // network test, measured); 4 MB holds a catch-up part (1 MB) and gossip beside it, and drains in about
  // 30 s (a ping interval) at 1 Mbit/s. 48 links (8 out, 40 in) at the bound are 192 MB at worst.
  maxSendQueueBytes: 4 << 20,
  maxBadFrames: 10,
  banMs: 600_000,
  hopLimit: 16,
  seenTtlMs: 3_600_000,
  seenMax: 200_000,
  keepMs: 86_400_000,
  keepMax: 10_000,
  maxClockSkewMs: 600_000,
  unstableDisconnects: 5,
  unstableWindowMs: 7_200_000,
  minimums: { outgoing: 8, uniqueOutgoingIps: 7, incoming: 4, uniqueIncomingIps: 3 },
};
