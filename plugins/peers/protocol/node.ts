/**
 * The peer protocol, independent of its transport: handshake (each side signs the other's nonce), signed
 * frames, per-link rate limits and bad-frame counting, outgoing peer choice with back-off, incoming cap,
 * ping/pong, broadcast with a seen-cache and a hop limit, and catch-up from kept messages. Time and timers
 * are injected so the simulation can run it on virtual time.
 */
import crypto from 'node:crypto';
import { DEFAULTS, type ProtocolConfig } from './config.ts';
import { Bucket, Conn } from './conn.ts';
import { formatAddr, messageHash, parseAddr, parseFrame, parseOriginBody, signedText, type Frame, type Gossip, type OriginBody } from './frames.ts';
import { canonicalIp, groupOf } from '../../../lib/net-addr/addr.ts';
import { isKey, verify, type NodeKeys } from './keys.ts';
import type { Link, Transport } from './transport.ts';

export const PROTOCOL_VERSION = '1';

export interface Delivered {
  type: string;
  payload: unknown;
  origin: string;
  sentAt: number;
  hash: string;
  hops: number;
}

export interface Kept {
  hash: string;
  m: string;
  s: string;
  sentAt: number;
  type: string;
}

export interface HistoryEvent {
  time: number;
  event: 'connected' | 'disconnected' | 'refused' | 'misbehaved';
  code: number;
  ip: string;
  port: number;
  direction: 'outbound' | 'inbound';
  reason: string;
}

/** A node-key proof a peer gives in its hello (membership, ../membership.ts). */
export interface MemberProof {
  pubKey: string;
  sig: string;
}

/** Who may join: proofs this node gives, and the check of the other side's (optional: open when absent). */
export interface Admission {
  /** This node's proof for a link whose other side chose `nonce`. */
  proof(peerKey: string, nonce: string): MemberProof | undefined;
  /** Whether the peer at `ip` with link key `key` proved a listed node key over `nonce` (this side's). */
  admit(a: { ip: string; key: string; nonce: string; proof: unknown }): Promise<{ ok: true; pubKey: string } | { ok: false; code: number; reason: string }>;
}

export interface Env {
  /** Membership check of every handshake; without it any key may join. */
  admission?: Admission;
  now(): number;
  setTimer(fn: () => void, ms: number): { clear(): void };
  /**
   * Ask the node at `addr` to open a link to this one (it has fewer incoming links than it needs); the
   * plugin calls that node's `/core/addoutgoingpeer` with this node's address. Optional.
   */
  askDialBack?(addr: string): void;
  /** Kept messages changed (persist them); optional. */
  onKept?(added: Kept[], dropped: string[]): void;
  /**
   * Why a message must be neither kept, delivered nor relayed (one carrying a secret in plain text), or
   * undefined to take it. Asked of every message received and of the node's own broadcasts.
   */
  refuse?(type: string, payload: unknown): string | undefined;
  log?: { debug(o: object, m: string): void; info(o: object, m: string): void; warn(o: object, m: string): void };
}

interface Known {
  /** seed, nodelist, peer, incoming, manual, dialback. */
  source: string;
  /** The address's IP and its group (groupOf), parsed once: maintain() looks at every known address. */
  ip: string;
  group: string;
  failures: number;
  nextTry: number;
  /** In the node list this node last read. */
  listed?: boolean;
}

/** Close code of a plain link replaced by a TLS link to the same node: not a disconnect. */
export const REPLACED = 4013;
/** Close codes by which the other side refused this node: not retried before `refusedRetryMs`. */
const REFUSALS = new Set([4003, 4006]);
/** Known addresses at most: a node list (about 13,000 nodes on the reference's network) and what peers tell. */
const KNOWN_MAX = 50_000;
/** What peers tell is kept only this far (an attacker's peer list cannot crowd out the node list). */
const TOLD_MAX = 5_000;

const rnd = () => crypto.randomBytes(12).toString('base64');

/** How long after start, and how many bytes of, messages without a handler yet are held for the first one. */
const WAITING_MS = 60_000;
const WAITING_BYTES = 4 << 20;

export class PeerNode {
  readonly cfg: ProtocolConfig;
  readonly conns = new Set<Conn>();
  readonly known = new Map<string, Known>();
  private readonly seen = new Map<string, number>();
  private readonly kept = new Map<string, Kept>();
  /**
   * Messages that came before any handler of their type (a plugin registers its handlers while it sets up,
   * after the peer network is up: the apps plugin's network policy arrived in that window and was never
   * taken, a failure seen in a suite run under load). Given to the first handler of the type; kept only in
   * the first minute after start and at most WAITING_BYTES in all, so a peer cannot fill memory with types
   * nobody handles.
   */
  private readonly waiting = new Map<string, { msg: Delivered; bytes: number }[]>();
  private waitingBytes = 0;
  private readonly createdAt: number;
  /** Own broadcasts that found no open link (bounded by how many are kept at all). */
  private undelivered: { m: string; s: string }[] = [];
  private readonly handlers = new Map<string, Set<(m: Delivered) => void>>();
  private readonly anyHandlers = new Set<(m: Delivered) => void>();
  private readonly banned = new Map<string, number>();
  private readonly disconnects = new Map<string, { times: number[]; first: number; reason: string }>();
  readonly history: HistoryEvent[] = [];
  readonly health: { time: number; status: string; outgoing: number; incoming: number }[] = [];
  readonly stats = { duplicates: 0, delivered: 0, badFrames: 0, gossipBytesSent: 0, sendQueueCuts: 0, refused: 0, dialBacksAsked: 0 };
  private timers: { clear(): void }[] = [];
  private pending = new Set<string>();
  /** What peers say this node's IP is (`seen` in their hello), while `autoIp`. */
  private readonly seenAs = new Map<string, number>();
  /** Links opened per peer address (a record's `reconnects` is this less one). */
  readonly opens = new Map<string, number>();
  private stopped = false;
  private told = 0;
  /** Addresses whose plain outgoing link is being replaced by a TLS one. */
  private readonly upgrading = new Set<string>();
  /** The IPs of the node list last read. */
  private listedIps = new Set<string>();
  private selfListed = true;
  private lastDialBackAsk = -Infinity;

  constructor(
    readonly keys: NodeKeys,
    private readonly transport: Transport,
    cfg: Partial<ProtocolConfig> & Pick<ProtocolConfig, 'ip' | 'port' | 'seeds'>,
    private readonly env: Env,
  ) {
    this.cfg = { ...DEFAULTS, ...cfg, minimums: { ...DEFAULTS.minimums, ...(cfg.minimums ?? {}) } };
    this.createdAt = env.now();
    for (const s of this.cfg.seeds) this.learn(s, 'seed');
  }

  get key() {
    return this.keys.publicKey;
  }
  get self() {
    return formatAddr(this.cfg.ip, this.cfg.port);
  }

  /** This node's address as the node list gives it: it wins over what peers say they see. */
  setOwnAddress(ip: string) {
    const c = canonicalIp(ip);
    if (!c || (c === this.cfg.ip && !this.cfg.autoIp)) return;
    this.cfg.autoIp = false;
    if (c !== this.cfg.ip) this.env.log?.info({ ip: c }, "peers: this node's address as the node list gives it");
    this.cfg.ip = c;
    this.known.delete(this.self);
  }

  // ------------------------------------------------------------------ lifecycle

  start() {
    const tick = () => {
      if (this.stopped) return;
      this.maintain();
      this.timers.push(this.env.setTimer(tick, this.cfg.maintainMs));
    };
    const ping = () => {
      if (this.stopped) return;
      this.pingAll();
      this.timers.push(this.env.setTimer(ping, this.cfg.pingMs));
    };
    tick();
    this.timers.push(this.env.setTimer(ping, this.cfg.pingMs));
  }

  stop() {
    this.stopped = true;
    for (const t of this.timers) t.clear();
    for (const c of [...this.conns]) this.drop(c, 1001, 'node stopping', false);
  }

  /** Messages kept from before (at start, from the plugin's store). */
  restore(items: Kept[]) {
    const now = this.env.now();
    for (const k of items) {
      if (now - k.sentAt > this.cfg.keepMs) continue;
      this.kept.set(k.hash, k);
      this.seen.set(k.hash, now);
    }
  }

  // ------------------------------------------------------------------ peers

  learn(addr: string, source: string) {
    const a = parseAddr(addr);
    if (!a) return;
    addr = formatAddr(a.ip, a.port);
    if (addr === this.self || this.known.has(addr) || this.known.size >= KNOWN_MAX) return;
    if (source === 'peer') {
      if (this.told >= TOLD_MAX) return;
      this.told++;
    }
    this.known.set(addr, { source, ip: a.ip, group: groupOf(a.ip), failures: 0, nextTry: 0 });
  }

  /**
   * The addresses of the node list just read (less this node's own): each becomes a known address to dial.
   * A newly listed address is tried at once (even if it was refused before, when it was not listed yet);
   * one no longer listed is forgotten unless a seed or a link keeps it. `selfListed`: the list shows this
   * node; when it shows it anew, every address that refused it may admit it now.
   */
  setListed(addrs: string[], selfListed = true) {
    const relisted = selfListed && !this.selfListed;
    this.selfListed = selfListed;
    const now = new Set<string>();
    const ips = new Set<string>();
    for (const raw of addrs) {
      const a = parseAddr(raw);
      if (!a) continue;
      const addr = formatAddr(a.ip, a.port);
      if (addr === this.self) continue;
      now.add(addr);
      ips.add(a.ip);
      const k = this.known.get(addr);
      if (!k) {
        if (this.known.size < KNOWN_MAX) this.known.set(addr, { source: 'nodelist', ip: a.ip, group: groupOf(a.ip), failures: 0, nextTry: 0, listed: true });
      } else if (!k.listed) {
        k.listed = true;
        k.failures = 0;
        k.nextTry = 0;
      }
    }
    const linked = new Set([...this.conns].map((c) => c.addr));
    for (const [addr, k] of this.known) {
      // An IP listed anew: whatever refused or was refused at it before may be admitted now.
      if (((ips.has(k.ip) && !this.listedIps.has(k.ip)) || relisted) && k.failures) {
        k.failures = 0;
        k.nextTry = 0;
      }
      if (!k.listed || now.has(addr)) continue;
      k.listed = false;
      if (k.source === 'nodelist' && !linked.has(addr)) this.known.delete(addr);
    }
    this.listedIps = ips;
  }

  outgoing() {
    return [...this.conns].filter((c) => c.direction === 'outbound' && c.state === 'open');
  }
  incoming() {
    return [...this.conns].filter((c) => c.direction === 'inbound' && c.state === 'open');
  }

  isBanned(ip: string) {
    const until = this.banned.get(ip);
    if (until === undefined) return false;
    if (until > this.env.now()) return true;
    this.banned.delete(ip);
    return false;
  }

  /**
   * Top up outgoing peers from the known addresses, spread over address groups (/16, IPv6 /32) and then
   * over IPs: each pick is a candidate of the group, then the IP, with the fewest outgoing links so far
   * (random among equals). Nodes sharing one public IP are distinct addresses (their own API ports) but
   * one group. Then ask for dial-backs while incoming links are short, and sample health.
   */
  maintain() {
    const now = this.env.now();
    const out = [...this.conns].filter((c) => c.direction === 'outbound' && c.state !== 'closed');
    // Only outgoing links count: a node that is also an incoming peer may still be dialled (a seed has no
    // other way to get outgoing peers in a small network).
    const busy = new Set([...out.map((c) => c.addr), ...this.pending]);
    let room = this.cfg.maxOutgoing - out.length - this.pending.size;
    if (room > 0) {
      const perGroup = new Map<string, number>();
      const perIp = new Map<string, number>();
      const count = (ip: string) => {
        const g = groupOf(ip);
        perGroup.set(g, (perGroup.get(g) ?? 0) + 1);
        perIp.set(ip, (perIp.get(ip) ?? 0) + 1);
      };
      for (const addr of busy) {
        const a = parseAddr(addr);
        if (a) count(a.ip);
      }
      const candidates: { addr: string; ip: string; group: string; r: number }[] = [];
      for (const [addr, k] of this.known) {
        if (k.nextTry > now || busy.has(addr) || this.isBanned(k.ip)) continue;
        candidates.push({ addr, ip: k.ip, group: k.group, r: Math.random() });
      }
      while (room > 0 && candidates.length) {
        let best = 0;
        const score = (c: (typeof candidates)[number]) => [perGroup.get(c.group) ?? 0, perIp.get(c.ip) ?? 0, c.r];
        let bs = score(candidates[0]);
        for (let i = 1; i < candidates.length; i++) {
          const sc = score(candidates[i]);
          if (sc[0] < bs[0] || (sc[0] === bs[0] && (sc[1] < bs[1] || (sc[1] === bs[1] && sc[2] < bs[2])))) [best, bs] = [i, sc];
        }
        const pick = candidates[best];
        candidates[best] = candidates[candidates.length - 1];
        candidates.pop();
        count(pick.ip);
        room--;
        void this.connect(pick.addr, this.known.get(pick.addr)?.source ?? 'auto');
      }
    }
    this.dialBacks(now);
    const o = this.outgoing().length;
    const inc = this.incoming().length;
    this.health.push({ time: now, status: this.status(o, inc), outgoing: o, incoming: inc });
    if (this.health.length > 60) this.health.shift();
    for (const [h, t] of this.seen) {
      if (now - t <= this.cfg.seenTtlMs) break;
      this.seen.delete(h);
    }
    this.expireKept(now);
  }

  /**
   * While this node has fewer incoming links than `minimums.incoming`, every `dialBackMs` it asks as many
   * known nodes as it lacks links to dial it (the reference's `addoutgoingpeer`): nodes it has no link with
   * first, then its outgoing peers (a link each way with one node still counts as an incoming link).
   */
  private dialBacks(now: number) {
    const need = this.cfg.minimums.incoming - this.incoming().length;
    if (need <= 0 || !this.env.askDialBack || now - this.lastDialBackAsk < this.cfg.dialBackMs) return;
    this.lastDialBackAsk = now;
    const inbound = new Set([...this.conns].filter((c) => c.direction === 'inbound').map((c) => c.addr));
    const outbound = new Set(this.outgoing().map((c) => c.addr));
    const pool = [...this.known.entries()].filter(([addr, k]) => !inbound.has(addr) && (k.listed || k.source === 'seed' || outbound.has(addr)) && k.nextTry <= now);
    pool.sort((a, b) => Number(outbound.has(a[0])) - Number(outbound.has(b[0])) || Math.random() - 0.5);
    for (const [addr] of pool.slice(0, need)) {
      this.stats.dialBacksAsked++;
      this.env.askDialBack(addr);
    }
  }

  private status(o: number, i: number) {
    const m = this.cfg.minimums;
    if (o === 0 && i === 0) return 'isolated';
    return o >= m.outgoing && i >= m.incoming ? 'healthy' : 'degraded';
  }

  /** Open an outgoing link to `ip:port`; resolves with what happened (for addpeer). */
  async connect(addr: string, source = 'manual'): Promise<'initiated' | 'already' | 'self' | 'refused'> {
    const a = parseAddr(addr);
    if (!a) return 'refused';
    addr = formatAddr(a.ip, a.port);
    if (addr === this.self) return 'self';
    if ([...this.conns].some((c) => c.direction === 'outbound' && c.addr === addr) || this.pending.has(addr)) return 'already';
    if (this.isBanned(a.ip)) return 'refused';
    this.learn(addr, source);
    this.pending.add(addr);
    let link: Link;
    try {
      link = await this.transport.connect(a.ip, a.port);
    } catch (e) {
      this.pending.delete(addr);
      this.backoff(addr);
      this.record('refused', 1006, a.ip, a.port, 'outbound', (e as Error).message);
      return 'refused';
    }
    this.pending.delete(addr);
    if (this.stopped) {
      link.close(1001, 'node stopping');
      return 'refused';
    }
    const c = this.attach(link, 'outbound', a.ip, source);
    c.port = a.port;
    return 'initiated';
  }

  /** A failed dial or a lost link: retried after `backoffBaseMs * 2^(failures-1)`, at most `backoffMaxMs`; refused: `refusedRetryMs`. */
  private backoff(addr: string, refused = false) {
    const k = this.known.get(addr);
    if (!k) return;
    k.failures++;
    const wait = Math.min(this.cfg.backoffMaxMs, this.cfg.backoffBaseMs * 2 ** Math.min(k.failures - 1, 20));
    k.nextTry = this.env.now() + (refused ? Math.max(wait, this.cfg.refusedRetryMs) : wait);
  }

  /** A link someone opened to this node (the transport calls this). */
  accept(link: Link) {
    const ip = canonicalIp(link.remoteIp) ?? link.remoteIp;
    if (this.isBanned(ip)) {
      this.record('refused', 4003, ip, 0, 'inbound', 'banned');
      return link.close(4003, 'banned');
    }
    if ([...this.conns].filter((c) => c.direction === 'inbound').length >= this.cfg.maxIncoming) {
      this.record('refused', 4005, ip, 0, 'inbound', 'incoming peers at their cap');
      return link.close(4005, 'incoming peers at their cap');
    }
    const c = this.attach(link, 'inbound', ip, 'incoming');
    this.raw(c, JSON.stringify({ t: 'challenge', d: JSON.stringify({ nonce: c.nonce, v: PROTOCOL_VERSION }) }));
  }

  private attach(link: Link, direction: 'outbound' | 'inbound', ip: string, source: string) {
    const now = this.env.now();
    const c = new Conn(link, direction, ip, new Bucket(this.cfg.textPerSecond, this.cfg.textBurst, now), new Bucket(this.cfg.binaryPerSecond, this.cfg.binaryBurst, now), rnd(), source);
    this.conns.add(c);
    link.onMessage((data, isBinary) => this.receive(c, data, isBinary));
    // 4010 from the other side means it refused us; only our own 4010 lists the other node as misbehaving.
    link.onClose((code, reason) => {
      // The other side did not admit this node (membership): worth a line in the history.
      if (this.conns.has(c) && c.state === 'handshake' && (code === 4006 || code === 4007)) this.record('refused', code, c.ip, c.port, c.direction, `refused by the peer: ${reason}`);
      this.closed(c, code === 4010 ? 4012 : code, reason);
    });
    const t = this.env.setTimer(() => {
      if (c.state === 'handshake') this.drop(c, 4008, 'handshake timed out');
    }, this.cfg.handshakeMs);
    c.timer = { clear: t.clear } as any;
    return c;
  }

  /** Close a link (removepeer, removeincomingpeer, misbehaviour). */
  drop(c: Conn, code: number, reason: string, count = true) {
    if (c.state === 'closed') return;
    try {
      c.link.close(code, reason);
    } catch {
      /* already gone */
    }
    this.closed(c, code, reason, count);
  }

  private closed(c: Conn, code: number, reason: string, count = true) {
    if (!this.conns.has(c)) return;
    this.conns.delete(c);
    (c.timer as any)?.clear?.();
    const wasOpen = c.state === 'open';
    c.state = 'closed';
    // Refused by the other side (not listed, banned) or by this one (the peer is not listed): not worth a
    // retry before refusedRetryMs; a node list read that newly lists the address clears it (setListed).
    if (c.direction === 'outbound' && code !== REPLACED) this.backoff(c.addr, !wasOpen && REFUSALS.has(code));
    if (!wasOpen && code !== 4010) return;
    if (code === REPLACED) count = false;
    this.record(code === 4010 ? 'misbehaved' : 'disconnected', code, c.ip, c.port, c.direction, reason);
    if (count && !this.stopped) {
      const now = this.env.now();
      const d = this.disconnects.get(c.addr) ?? { times: [], first: now, reason: '' };
      d.times = d.times.filter((t) => now - t <= this.cfg.unstableWindowMs);
      // A link closed for bad frames counts as enough disconnects to be listed at once.
      const n = code === 4010 ? this.cfg.unstableDisconnects : 1;
      for (let i = 0; i < n; i++) d.times.push(now);
      if (d.times.length === n) d.first = now;
      d.reason = reason;
      this.disconnects.set(c.addr, d);
    }
  }

  private record(event: HistoryEvent['event'], code: number, ip: string, port: number, direction: HistoryEvent['direction'], reason: string) {
    this.history.push({ time: this.env.now(), event, code, ip, port, direction, reason });
    if (this.history.length > 1000) this.history.shift();
  }

  unstable() {
    const now = this.env.now();
    const out: { ip: string; port: string; disconnects: number; firstDisconnect: number; reason: string }[] = [];
    for (const [addr, d] of this.disconnects) {
      const times = d.times.filter((t) => now - t <= this.cfg.unstableWindowMs);
      if (times.length >= this.cfg.unstableDisconnects) {
        const i = addr.lastIndexOf(':');
        out.push({ ip: addr.slice(0, i), port: addr.slice(i + 1), disconnects: times.length, firstDisconnect: d.first, reason: d.reason });
      }
    }
    return out;
  }

  // ------------------------------------------------------------------ frames

  /**
   * Every frame to a peer goes out here, so here the send queue is bounded: a frame that would take the
   * bytes waiting for the peer over `maxSendQueueBytes` is not queued, and the peer is cut.
   */
  private raw(c: Conn, text: string) {
    if (c.state === 'closed') return;
    const queued = c.link.buffered();
    if (queued + text.length > this.cfg.maxSendQueueBytes) return this.overflow(c, queued);
    c.sendQueuePeak = Math.max(c.sendQueuePeak, queued + text.length);
    c.messagesSent++;
    c.bytesSent += text.length;
    try {
      c.link.send(text);
    } catch {
      this.drop(c, 1006, 'send failed');
    }
  }

  private send(c: Conn, t: Frame['t'], data: unknown) {
    if (c.state === 'closed') return;
    const d = JSON.stringify(data);
    const n = ++c.seqOut;
    const text = JSON.stringify({ t, n, k: this.key, d, s: this.keys.sign(signedText(t, n, d)) });
    if (t === 'gossip' || t === 'syncbatch') this.stats.gossipBytesSent += text.length;
    this.raw(c, text);
  }

  private bad(c: Conn, why: string) {
    c.badMessages++;
    this.stats.badFrames++;
    this.env.log?.debug({ ip: c.ip, why, bad: c.badMessages }, 'peers: bad frame');
    if (c.state === 'handshake' || c.badMessages >= this.cfg.maxBadFrames) {
      this.banned.set(c.ip, this.env.now() + this.cfg.banMs);
      this.env.log?.warn({ ip: c.ip, port: c.port, why }, 'peers: peer closed for bad frames, its IP refused for a while');
      this.drop(c, 4010, `bad frames (${why})`);
    }
  }

  /**
   * A peer that does not take what it is sent (it asked for catch-ups and does not read them, say) is
   * treated as one sending bad frames: its IP refused for `banMs`, the link closed 4010 (listed as unstable
   * at once). The socket is destroyed rather than closed: a close frame would wait behind the queue.
   */
  private overflow(c: Conn, queued: number) {
    c.badMessages++;
    this.stats.badFrames++;
    this.stats.sendQueueCuts++;
    this.banned.set(c.ip, this.env.now() + this.cfg.banMs);
    const reason = `send queue over ${this.cfg.maxSendQueueBytes} bytes (the peer does not read)`;
    this.env.log?.warn({ ip: c.ip, port: c.port, queued }, 'peers: peer cut, its send queue is full; its IP refused for a while');
    c.link.abort();
    this.closed(c, 4010, reason);
  }

  private receive(c: Conn, data: string | Buffer, isBinary: boolean) {
    if (c.state === 'closed') return;
    if (c.held) {
      // The other side opened while this side still checks its membership: its first frames wait.
      if (c.held.length >= 32) return this.drop(c, 4008, 'too many frames before admission', false);
      c.held.push([data, isBinary]);
      return;
    }
    const now = this.env.now();
    const len = typeof data === 'string' ? data.length : data.length;
    c.bytesReceived += len;
    if (isBinary) {
      if (!c.binary.take(now)) return this.bad(c, 'binary rate');
      return this.bad(c, 'binary frames carry nothing in this protocol');
    }
    if (!c.text.take(now)) return this.bad(c, 'text rate');
    if (len > this.cfg.maxFrameBytes) return this.bad(c, 'oversized');
    const f = parseFrame(typeof data === 'string' ? data : data.toString('utf8'));
    if (typeof f === 'string') return this.bad(c, f);
    c.messagesReceived++;
    if (c.state === 'handshake') return this.handshake(c, f);
    if (f.t === 'challenge' || f.t === 'hello') return this.bad(c, 'handshake frame after the handshake');
    if (f.k !== c.key || f.n <= c.seqIn || !verify(c.key, signedText(f.t, f.n, f.d), f.s)) return this.bad(c, 'signature');
    c.seqIn = f.n;
    const d = bodyOf(f);
    if (!d) return this.bad(c, 'malformed');
    switch (f.t) {
      case 'ping':
        if (!Number.isFinite(d.ts)) return this.bad(c, 'malformed');
        c.remoteClockOffsetMs = now - d.ts;
        return this.send(c, 'pong', { ts: d.ts, at: now });
      case 'pong':
        if (!Number.isFinite(d.ts)) return this.bad(c, 'malformed');
        c.latency = now - d.ts;
        c.lastTransmissionDelay = c.latency / 2;
        c.lastPongTime = now;
        c.missedPongs = 0;
        return;
      case 'peers':
        return this.peersFrame(c, d);
      case 'gossip':
        return this.gossip(c, d, false);
      case 'sync':
        return this.sync(c, d);
      case 'syncbatch':
        if (!Array.isArray(d.items) || d.items.length > 1000) return this.bad(c, 'malformed');
        for (const it of d.items) this.gossip(c, { ...it, h: this.cfg.hopLimit }, true);
        // More to catch up on: ask for the next part (only a side that asks, the outbound one).
        if (Number.isFinite(d.more) && c.direction === 'outbound' && c.state === 'open') this.send(c, 'sync', { since: d.more });
        return;
    }
  }

  private handshake(c: Conn, f: Frame) {
    const d = bodyOf(f);
    if (!d) return this.bad(c, 'malformed');
    if (f.t === 'challenge') {
      if (c.direction !== 'outbound' || typeof d.nonce !== 'string' || d.nonce.length > 64 || c.seqOut) return this.bad(c, 'unexpected challenge');
      return this.send(c, 'hello', { nonce: c.nonce, echo: d.nonce, port: this.cfg.port, tls: this.cfg.tlsPort || undefined, v: PROTOCOL_VERSION, time: this.env.now(), member: this.env.admission?.proof(this.key, d.nonce) });
    }
    if (f.t !== 'hello') return this.bad(c, 'frame before the handshake');
    if (!isKey(f.k) || !verify(f.k, signedText(f.t, f.n, f.d), f.s) || f.n !== 1) return this.bad(c, 'signature');
    if (d.echo !== c.nonce || typeof d.nonce !== 'string' || d.nonce.length > 64 || !Number.isInteger(d.port) || d.port < 1 || d.port > 65535)
      return this.bad(c, 'hello');
    if (f.k === this.key) {
      // Dialled ourselves (a seed or a peer list naming this node's own address under another form).
      if (c.direction === 'outbound') this.known.delete(c.addr);
      return this.drop(c, 4009, 'connected to itself', false);
    }
    if (this.duplicate(c, f.k, d.port)) return;
    const adm = this.env.admission;
    if (!adm) return this.admitted(c, f, d, '');
    c.held = [];
    const refuse = (code: number, reason: string) => {
      if (c.state === 'closed') return;
      this.record('refused', code, c.ip, d.port, c.direction, reason);
      this.env.log?.info({ ip: c.ip, port: d.port, direction: c.direction, reason }, 'peers: peer not admitted');
      this.drop(c, code, reason, false);
    };
    adm.admit({ ip: c.ip, key: f.k, nonce: c.nonce, proof: d.member }).then(
      (r) => {
        if (c.state === 'closed') return;
        if (!r.ok) return refuse(r.code, r.reason);
        if (this.duplicate(c, f.k, d.port)) return;
        const held = c.held ?? [];
        c.held = null;
        this.admitted(c, f, d, r.pubKey);
        for (const [data, b] of held) this.receive(c, data, b);
      },
      (e) => refuse(4007, `membership check failed: ${(e as Error).message}`),
    );
  }

  /** A key already linked in the same direction, or from another IP, is refused (4004). */
  private duplicate(c: Conn, key: string, port: number): boolean {
    const same = [...this.conns].find((o) => o !== c && o.key === key && o.state === 'open' && !this.upgrades(c, o, port) && (o.direction === c.direction || o.ip !== c.ip));
    if (same) {
      this.record('refused', 4004, c.ip, port, c.direction, 'already connected to this node');
      this.drop(c, 4004, 'already connected to this node', false);
      return true;
    }
    return false;
  }

  /** Whether `c` is a TLS link that takes the place of the plain link `o` (same node, IP and direction). */
  private upgrades(c: Conn, o: Conn, port = c.port) {
    return !!c.link.secure && !o.link.secure && o.direction === c.direction && o.ip === c.ip && o.port === port;
  }

  /**
   * A plain outgoing link to a node that offers TLS is replaced by a TLS one: the dialler opens the TLS
   * link (the transport plans it first now that the hello named the port), and once it is open closes the
   * plain one with REPLACED, which neither side counts as a disconnect. A link opened before the dialler
   * knew the node serves HTTPS would otherwise stay plain for as long as it lasts (days).
   */
  private async upgrade(old: Conn) {
    if (this.stopped || this.upgrading.has(old.addr)) return;
    this.upgrading.add(old.addr);
    try {
      const link = await this.transport.connect(old.ip, old.port);
      // TLS failed there and plain answered instead: keep the link there is.
      if (!link.secure || old.state !== 'open' || this.stopped) return link.close(1000, 'not needed');
      const c = this.attach(link, 'outbound', old.ip, old.source);
      c.port = old.port;
    } catch {
      /* the plain link stays */
    } finally {
      this.upgrading.delete(old.addr);
    }
  }

  private admitted(c: Conn, f: Frame, d: any, member: string) {
    c.key = f.k;
    c.member = member;
    c.seqIn = f.n;
    c.remoteVersion = String(d.v ?? '');
    c.remoteClockOffsetMs = Number.isFinite(d.time) ? this.env.now() - d.time : 0;
    if (c.direction === 'outbound' && this.cfg.autoIp && typeof d.seen === 'string' && d.seen.length < 60 && canonicalIp(d.seen)) this.observed(canonicalIp(d.seen)!);
    if (c.direction === 'inbound') {
      c.port = d.port;
      // `seen`: the IP this peer connects from, as this node sees it (how a node behind no fixed
      // configuration learns its own address).
      this.send(c, 'hello', { nonce: c.nonce, echo: d.nonce, port: this.cfg.port, tls: this.cfg.tlsPort || undefined, v: PROTOCOL_VERSION, time: this.env.now(), seen: c.ip, member: this.env.admission?.proof(this.key, d.nonce) });
      this.learn(c.addr, 'incoming');
    }
    // `tls`: the port the peer serves HTTPS on (optional: older nodes send none, and a bad value is ignored).
    const tls = Number.isInteger(d.tls) && d.tls > 0 && d.tls <= 65535 ? d.tls : 0;
    this.transport.offered?.(c.ip, c.port, tls);
    const replaced = [...this.conns].filter((o) => o !== c && o.key === c.key && o.state === 'open' && this.upgrades(c, o));
    this.open(c);
    // The dialler closes the plain link it replaced (the other side then sees REPLACED too).
    if (c.direction === 'outbound') for (const o of replaced) this.drop(o, REPLACED, 'replaced by a TLS link', false);
    if (c.direction === 'outbound' && !c.link.secure && tls && c.state === 'open') void this.upgrade(c);
  }

  /** Take the IP most peers report (one report per peer key would be stricter; counts are capped). */
  private observed(ip: string) {
    if (this.seenAs.size > 100 && !this.seenAs.has(ip)) return;
    this.seenAs.set(ip, Math.min(1000, (this.seenAs.get(ip) ?? 0) + 1));
    let best = this.cfg.ip;
    let n = 0;
    for (const [k, v] of this.seenAs) if (v > n) [best, n] = [k, v];
    if (best !== this.cfg.ip) {
      this.env.log?.info({ ip: best }, 'peers: this node\'s address as its peers see it');
      this.cfg.ip = best;
    }
  }

  private open(c: Conn) {
    c.state = 'open';
    c.connectedAt = this.env.now();
    (c.timer as any)?.clear?.();
    const k = this.known.get(c.addr);
    if (k && c.direction === 'outbound') {
      k.failures = 0;
      k.nextTry = 0;
    }
    this.record('connected', 0, c.ip, c.port, c.direction, '');
    this.opens.set(c.addr, (this.opens.get(c.addr) ?? 0) + 1);
    if (this.opens.size > 10_000) this.opens.delete(this.opens.keys().next().value!);
    this.send(c, 'peers', this.report());
    // Own broadcasts made while no link was open, before the catch-up answer: the peer takes them as new
    // gossip and passes them on, so they flood as if sent now.
    for (const u of this.undelivered.splice(0)) this.send(c, 'gossip', { m: u.m, s: u.s, h: 0 } satisfies Gossip);
    // Catch up: ask for what was broadcast since the newest message held here (less a margin for clock skew).
    if (c.direction === 'outbound') {
      let newest = 0;
      for (const k of this.kept.values()) newest = Math.max(newest, k.sentAt);
      this.send(c, 'sync', { since: newest ? newest - this.cfg.maxClockSkewMs : 0 });
    }
  }

  private report() {
    const open = [...this.conns].filter((c) => c.state === 'open');
    return {
      outbound: open.filter((c) => c.direction === 'outbound').map((c) => c.addr),
      inbound: open.filter((c) => c.direction === 'inbound').map((c) => c.addr),
    };
  }

  private peersFrame(c: Conn, d: any) {
    const ok = (l: unknown) => Array.isArray(l) && l.length <= 200 && l.every((a) => parseAddr(a));
    if (!ok(d.outbound) || !ok(d.inbound)) return this.bad(c, 'malformed');
    c.report = { outbound: d.outbound, inbound: d.inbound };
    for (const a of [...d.outbound, ...d.inbound]) this.learn(a, 'peer');
  }

  private pingAll() {
    const now = this.env.now();
    for (const c of this.conns) {
      if (c.state !== 'open') continue;
      if (c.lastPingTime && c.lastPongTime < c.lastPingTime) c.missedPongs++;
      if (c.missedPongs >= this.cfg.maxMissedPongs) {
        this.drop(c, 4011, 'no pong');
        continue;
      }
      c.lastPingTime = now;
      this.send(c, 'ping', { ts: now });
      // The topology report travels with the pings, so /core/topology stays current.
      this.send(c, 'peers', this.report());
    }
  }

  // ------------------------------------------------------------------ broadcast

  on(type: string, fn: (m: Delivered) => void) {
    let s = this.handlers.get(type);
    if (!s) this.handlers.set(type, (s = new Set()));
    s.add(fn);
    const early = this.waiting.get(type);
    if (early) {
      this.waiting.delete(type);
      for (const m of early) this.waitingBytes -= m.bytes;
      // After this call returns, as a delivery would come: the caller may still be wiring things up.
      queueMicrotask(() => {
        for (const m of early) this.call(fn, m.msg);
      });
    }
    return () => void s!.delete(fn);
  }

  onAny(fn: (m: Delivered) => void) {
    this.anyHandlers.add(fn);
    return () => void this.anyHandlers.delete(fn);
  }

  /** Sign and send a message to every peer; `only` limits the first hop to one direction. */
  broadcast(type: string, payload: unknown, only?: 'outbound' | 'inbound'): string {
    const refused = this.env.refuse?.(type, payload);
    if (refused) {
      // The callers refuse such data before they get here (a route answers 400); this is the last stop.
      this.env.log?.warn({ type, reason: refused }, 'peers: own broadcast not sent');
      return '';
    }
    const body: OriginBody = { type, payload, origin: this.key, sentAt: this.env.now(), nonce: rnd() };
    const m = JSON.stringify(body);
    const s = this.keys.sign(m);
    const hash = messageHash(m);
    this.remember(hash);
    this.keep({ hash, m, s, sentAt: body.sentAt, type });
    const sent = new Set<string>();
    for (const c of this.conns) {
      // One copy per node: two nodes may be linked both ways.
      if (c.state !== 'open' || (only && c.direction !== only) || sent.has(c.key)) continue;
      sent.add(c.key);
      this.send(c, 'gossip', { m, s, h: 0 } satisfies Gossip);
    }
    // Sent to nobody: it goes out as gossip on the next link that opens (see open()). Catch-up alone did
    // not carry it: a peer asks for what was sent since the newest message it holds, and one that got newer
    // messages from others first never asked for this older one (a node of the peer apps test never got the
    // network policy its seed had taken before any link was up).
    if (!sent.size && !only) {
      this.undelivered.push({ m, s });
      if (this.undelivered.length > this.cfg.keepMax) this.undelivered.shift();
    }
    return hash;
  }

  private remember(hash: string) {
    this.seen.set(hash, this.env.now());
    if (this.seen.size > this.cfg.seenMax) this.seen.delete(this.seen.keys().next().value!);
  }

  private keep(k: Kept) {
    this.kept.set(k.hash, k);
    const dropped: string[] = [];
    while (this.kept.size > this.cfg.keepMax) {
      const first = this.kept.keys().next().value!;
      this.kept.delete(first);
      dropped.push(first);
    }
    this.env.onKept?.([k], dropped);
  }

  private expireKept(now: number) {
    const dropped: string[] = [];
    for (const [h, k] of this.kept) if (now - k.sentAt > this.cfg.keepMs) dropped.push(h);
    for (const h of dropped) this.kept.delete(h);
    if (dropped.length) this.env.onKept?.([], dropped);
  }

  private gossip(c: Conn, d: any, catchUp: boolean) {
    if (typeof d.m !== 'string' || typeof d.s !== 'string' || !Number.isInteger(d.h) || d.h < 0) return this.bad(c, 'malformed');
    const hash = messageHash(d.m);
    if (this.seen.has(hash)) {
      if (!catchUp) this.stats.duplicates++;
      return;
    }
    const body = parseOriginBody(d.m);
    if (!body || !isKey(body.origin)) return this.bad(c, 'malformed');
    if (!verify(body.origin, d.m, d.s)) return this.bad(c, 'forged message');
    const now = this.env.now();
    if (body.sentAt > now + this.cfg.maxClockSkewMs) return this.bad(c, 'from the future');
    if (now - body.sentAt > this.cfg.keepMs) return; // too old to matter: neither kept nor delivered
    this.remember(hash);
    if (body.origin === this.key) return;
    const refused = this.env.refuse?.(body.type, body.payload);
    if (refused) {
      // Remembered as seen (its copies from other links are duplicates), never kept, delivered or relayed.
      this.stats.refused++;
      this.env.log?.info({ type: body.type, origin: body.origin, reason: refused }, 'peers: message refused');
      return;
    }
    this.keep({ hash, m: d.m, s: d.s, sentAt: body.sentAt, type: body.type });
    const hops = d.h + 1;
    const msg: Delivered = { type: body.type, payload: body.payload, origin: body.origin, sentAt: body.sentAt, hash, hops };
    this.stats.delivered++;
    for (const fn of this.anyHandlers) this.call(fn, msg);
    if (this.waiting.size && now - this.createdAt >= WAITING_MS) {
      this.waiting.clear();
      this.waitingBytes = 0;
    }
    const typed = this.handlers.get(body.type);
    if (typed?.size) for (const fn of typed) this.call(fn, msg);
    else if (now - this.createdAt < WAITING_MS && this.waitingBytes + d.m.length <= WAITING_BYTES) {
      const list = this.waiting.get(body.type) ?? [];
      list.push({ msg, bytes: d.m.length });
      this.waiting.set(body.type, list);
      this.waitingBytes += d.m.length;
    }
    if (!catchUp && hops < this.cfg.hopLimit) {
      const sent = new Set<string>([c.key, body.origin]);
      for (const o of this.conns) {
        if (o.state !== 'open' || sent.has(o.key)) continue;
        sent.add(o.key);
        this.send(o, 'gossip', { m: d.m, s: d.s, h: hops });
      }
    }
  }

  private call(fn: (m: Delivered) => void, msg: Delivered) {
    try {
      fn(msg);
    } catch (e) {
      this.env.log?.warn({ err: (e as Error).message, type: msg.type }, 'peers: a message handler failed');
    }
  }

  /**
   * A catch-up answer: what is kept since `since`, oldest first, in batches of a frame each, at most a
   * quarter of the send queue per request. The last batch then names `more` (the send time of the next
   * message), which the asking side sends back as its next `since`; a part ends only between two send
   * times, so each part moves on. A peer that reads gets everything one part at a time; one that asks
   * and does not read fills its queue and is cut (raw()).
   */
  private sync(c: Conn, d: any) {
    if (!Number.isFinite(d.since)) return this.bad(c, 'malformed');
    const items = [...this.kept.values()].filter((k) => k.sentAt >= d.since).sort((a, b) => a.sentAt - b.sentAt);
    let batch: { m: string; s: string }[] = [];
    let size = 0;
    let answered = 0;
    let last = -Infinity;
    const budget = this.cfg.maxFrameBytes * 0.6;
    const part = this.cfg.maxSendQueueBytes / 4;
    for (const k of items) {
      if (c.state === 'closed') return;
      if (answered + size >= part && k.sentAt !== last) {
        this.send(c, 'syncbatch', { items: batch, more: k.sentAt });
        return;
      }
      const len = k.m.length * 1.3 + 120;
      if (batch.length && (size + len > budget || batch.length >= 500)) {
        this.send(c, 'syncbatch', { items: batch });
        answered += size;
        batch = [];
        size = 0;
      }
      if (len > budget) continue; // a single message too big to batch stays behind
      batch.push({ m: k.m, s: k.s });
      size += len;
      last = k.sentAt;
    }
    if (batch.length) this.send(c, 'syncbatch', { items: batch });
  }

  keptMessages() {
    return [...this.kept.values()];
  }
}

/** A frame's data: the JSON object it carries, or null for anything else (counted as malformed). */
function bodyOf(f: Frame): any {
  try {
    const d = JSON.parse(f.d);
    return d && typeof d === 'object' ? d : null;
  } catch {
    return null;
  }
}
