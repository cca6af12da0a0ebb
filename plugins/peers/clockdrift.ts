/**
 * This node's clock against its peers' (`/core/clockdrift`, the `clockdrift` health check). Each open link
 * gives the peer's offset from the timestamps of its signed frames: the `time` of its hello and the `ts` of
 * each ping, against this node's clock when the frame arrived (`remoteClockOffsetMs`, protocol/node.ts), less
 * half the link's measured round trip (the frame's way over; 0 before the first pong). The node's own offset
 * is the median over its peers, so one peer with a wrong clock does not make every other node look wrong.
 */

/** One link as the measure needs it. */
export interface LinkClock {
  ip: string;
  port: number;
  direction: 'outbound' | 'inbound';
  nodeKey: string;
  /** This node's clock when the peer's last stamped frame arrived, less that stamp (ms). */
  remoteClockOffsetMs: number;
  /** Round trip of the last ping (ms); negative before the first pong. */
  latency: number;
}

export interface PeerClock {
  ip: string;
  port: number;
  nodeKey: string;
  /** Open links to it (a peer linked both ways counts once, its links' offsets averaged). */
  links: number;
  /** The peer's clock less this node's, in seconds (a peer behind this node is negative). */
  offset: number;
}

export interface DriftReport {
  /** Where the offset comes from: `peers`, or `none` without any open link (the reference: chrony, timesyncd or none). */
  source: 'peers' | 'none';
  /** This node's clock less its peers' (the median), in seconds; null without peers. Positive: this node is ahead. */
  offset: number | null;
  /** This node's clock, unix seconds. */
  time: number;
  /** How many peers (distinct nodes) the median is over. */
  peers: number;
  offsets: PeerClock[];
  /** The limit (`peers.maxClockDriftMs`), in seconds. */
  limit: number;
  over: boolean;
}

const seconds = (ms: number) => Math.round(ms) / 1000;

/**
 * The median of `xs`; of an even count's two middle values, the one nearer zero: a node is called off only
 * when more than half of its peers say so (with two peers that disagree, neither is believed).
 */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  if (s.length % 2) return s[mid];
  return Math.abs(s[mid - 1]) <= Math.abs(s[mid]) ? s[mid - 1] : s[mid];
}

export class ClockDrift {
  /** Whether the last measure was over the limit (null: never measured), so a change is logged once. */
  private wasOver: boolean | null = null;

  constructor(
    private readonly limitMs: number,
    private readonly now: () => number,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
  ) {}

  /** Measure over the open links; logs a warning when the offset goes over the limit, info when it comes back. */
  measure(links: LinkClock[]): DriftReport {
    // One vote per peer: a node linked both ways would otherwise count twice.
    const byPeer = new Map<string, { ip: string; port: number; nodeKey: string; sum: number; links: number }>();
    for (const l of links) {
      const id = l.nodeKey || `${l.ip}:${l.port}`;
      const p = byPeer.get(id) ?? { ip: l.ip, port: l.port, nodeKey: l.nodeKey, sum: 0, links: 0 };
      p.sum += (l.latency >= 0 ? l.latency / 2 : 0) - l.remoteClockOffsetMs;
      p.links++;
      byPeer.set(id, p);
    }
    const offsets: PeerClock[] = [...byPeer.values()].map((p) => ({ ip: p.ip, port: p.port, nodeKey: p.nodeKey, links: p.links, offset: seconds(p.sum / p.links) }));
    const base = { time: Math.floor(this.now() / 1000), peers: offsets.length, offsets, limit: this.limitMs / 1000 };
    if (!offsets.length) return { source: 'none', offset: null, ...base, over: false };
    const offset = -median(offsets.map((o) => o.offset)) || 0;
    const over = Math.abs(offset) * 1000 > this.limitMs;
    if (over !== this.wasOver) {
      const o = { offsetSeconds: offset, peers: offsets.length, limitSeconds: base.limit };
      if (over) this.log.warn(o, `peers: this node's clock is ${Math.abs(offset)} s ${offset > 0 ? 'ahead of' : 'behind'} its peers' (median), over the ${base.limit} s limit`);
      else if (this.wasOver) this.log.info(o, `peers: this node's clock is back within ${base.limit} s of its peers'`);
      this.wasOver = over;
    }
    return { source: 'peers', offset, ...base, over };
  }
}

/** The health check's verdict on a report: failing over the limit; the message names peers off by more. */
export function driftCheck(r: DriftReport): { ok: boolean; message: string; detail: DriftReport } {
  if (r.offset === null) return { ok: true, message: 'no peers to compare the clock with', detail: r };
  const far = r.offsets.filter((o) => Math.abs(o.offset) > r.limit).map((o) => `${o.ip}:${o.port} (${o.offset > 0 ? '+' : ''}${o.offset} s)`);
  const head = r.over
    ? `clock ${Math.abs(r.offset)} s ${r.offset > 0 ? 'ahead of' : 'behind'} its peers (median of ${r.peers}), over the ${r.limit} s limit`
    : `clock within ${r.limit} s of its peers (median offset ${r.offset} s over ${r.peers})`;
  return { ok: !r.over, message: far.length ? `${head}; peers off by more than ${r.limit} s: ${far.join(', ')}` : head, detail: r };
}
