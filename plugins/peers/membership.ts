/**
 * Who may join the peer network (`peers.membership`):
 * - `nodelist` (default): a peer is admitted only when it proves, in its handshake `hello`, control of a node
 *   key that the daemon's deterministic node list (`viewdeterministiclegacynodelist`, the confirmed nodes)
 *   shows at the IP the link runs to (inbound: the IP it connects from; outbound: the IP dialled). The proof
 *   is a Bitcoin-style message signature by that node key of `corenode peer\n<ed25519 peer key>\n<nonce>`,
 *   the nonce being the one the receiving side chose for this link: it binds the link's Ed25519 key to the
 *   listed node and cannot be replayed on another link. Both sides check each other.
 * - `open`: any key may join (small test networks without a daemon).
 * A node whose list cannot be read admits nobody new and keeps the peers it has (`revalidate` drops only
 * peers a list it could read no longer shows).
 */
import type { Log } from '../../core/plugin-api.ts';
import type { DaemonService } from '../daemon/api.ts';
import { listedAddresses, listedAt, nodeSigner, PUBKEY, signedBy, type ListedNode, type NodeSigner } from '../../lib/nodelist/signature.ts';
import { canonicalIp, formatAddr, isIpv6, parseListed } from '../../lib/net-addr/addr.ts';
import type { Admission, MemberProof } from './protocol/node.ts';

export const proofText = (peerKey: string, nonce: string) => `corenode peer\n${peerKey}\n${nonce}`;
/** What a node signs to say which listed node owns its link key, for messages that travel further (global commands). */
export const originText = (peerKey: string, ip: string) => `corenode origin\n${peerKey}\n${ip}`;

/** A listed node's statement that the Ed25519 key `peerKey` is its own, at `ip`. */
export interface OriginProof {
  pubKey: string;
  ip: string;
  sig: string;
}

/** Close codes of refused joins. */
export const NOT_LISTED = 4006;
export const LIST_UNAVAILABLE = 4007;

export interface MembershipOptions {
  mode: 'nodelist' | 'open';
  daemon: () => DaemonService | undefined;
  /** The node key's secret (WIF or hex), looked up when first needed (config, else the daemon's conf). */
  secret: () => string | undefined;
  /** How long a node list read is used; a key not in it is looked up again after `missRefreshMs`. */
  cacheMs: number;
  missRefreshMs: number;
  log: Log;
}

/** The API port of a node list entry that names none (the reference's default). */
export const DEFAULT_API_PORT = 16127;

/**
 * Whether the list shows `pubKey` where a link from or to `ip` may come from: at `ip` itself, or, when the
 * list gives it addresses of the other family only, anywhere in `ip`'s family. A node list entry has one
 * address; a dual-stack node listed at its IPv4 reaches an IPv6-only node from its IPv6, which no list
 * shows. Such a link is bound to the key alone (its proof over this link's nonce), not to an address: the
 * one place a stolen node key could join from an address not its own (README: Membership).
 */
export function listedFor(list: unknown, pubKey: string, ip: string): boolean {
  if (listedAt(list, pubKey, ip)) return true;
  const at = listedAddresses(list, pubKey).map((a) => canonicalIp(a)).filter((a): a is string => !!a);
  return at.length > 0 && at.every((a) => isIpv6(a) !== isIpv6(ip));
}

export class Membership implements Admission {
  private signer: NodeSigner | null | undefined;
  private list: { at: number; nodes: unknown[] } | null = null;
  private reading: Promise<unknown[]> | null = null;
  private warned = false;
  private parsedList: { nodes: unknown[]; entries: { addr: string; ip: string; port: number; key: string }[]; addrs: Set<string> } | null = null;
  /** The last unusable secret (warned about once). */
  private badSecret = '';

  constructor(private readonly o: MembershipOptions) {}

  get mode() {
    return this.o.mode;
  }

  /** This node's listed key, when it has one. */
  get pubKey(): string | null {
    return this.nodeSigner()?.pubKey ?? null;
  }

  private nodeSigner(): NodeSigner | null {
    if (this.signer !== undefined && this.signer !== null) return this.signer;
    const secret = this.o.secret();
    if (!secret) {
      if (this.o.mode === 'nodelist' && !this.warned) {
        this.warned = true;
        this.o.log.warn({}, 'peers: no node key (peers.nodePrivateKey, or legacynodeprivkey in the daemon conf): nodes of the node list will refuse this node');
      }
      return null;
    }
    try {
      this.signer = nodeSigner(secret);
    } catch (e) {
      this.signer = null;
      if (this.badSecret !== secret) this.o.log.warn({ err: (e as Error).message }, 'peers: the node key is not usable');
      this.badSecret = secret;
    }
    return this.signer;
  }

  proof(peerKey: string, nonce: string): MemberProof | undefined {
    const s = this.nodeSigner();
    return s ? { pubKey: s.pubKey, sig: s.sign(proofText(peerKey, nonce)) } : undefined;
  }

  private async nodes(fresh: boolean): Promise<unknown[]> {
    const now = Date.now();
    if (this.list && !fresh && now - this.list.at < this.o.cacheMs) return this.list.nodes;
    if (this.list && fresh && now - this.list.at < this.o.missRefreshMs) return this.list.nodes;
    if (!this.reading) {
      const daemon = this.o.daemon();
      if (!daemon) throw new Error('the daemon plugin is not running on this node');
      this.reading = daemon
        .call<unknown[]>('viewdeterministiclegacynodelist', [])
        .then((nodes) => {
          if (!Array.isArray(nodes)) throw new Error('the daemon answered no list');
          this.list = { at: Date.now(), nodes };
          return nodes;
        })
        .finally(() => (this.reading = null));
    }
    return this.reading;
  }

  async admit(a: { ip: string; key: string; nonce: string; proof: unknown }): Promise<{ ok: true; pubKey: string } | { ok: false; code: number; reason: string }> {
    if (this.o.mode === 'open') return { ok: true, pubKey: '' };
    const p = a.proof as MemberProof | undefined;
    if (!p || typeof p !== 'object' || typeof p.pubKey !== 'string' || !PUBKEY.test(p.pubKey) || typeof p.sig !== 'string')
      return { ok: false, code: NOT_LISTED, reason: 'no proof of a listed node key' };
    if (!signedBy(proofText(a.key, a.nonce), p.pubKey, p.sig)) return { ok: false, code: NOT_LISTED, reason: 'the node key proof does not verify' };
    try {
      let nodes = await this.nodes(false);
      if (!listedFor(nodes, p.pubKey, a.ip)) nodes = await this.nodes(true);
      if (!listedFor(nodes, p.pubKey, a.ip)) return { ok: false, code: NOT_LISTED, reason: `node key ${p.pubKey.slice(0, 16)}… is not listed at ${a.ip}` };
    } catch (e) {
      return { ok: false, code: LIST_UNAVAILABLE, reason: `the node list cannot be read: ${((e as Error).message ?? '').slice(0, 100)}` };
    }
    return { ok: true, pubKey: p.pubKey };
  }

  /** This node's origin proof for its link key at `ip` (none without a node key). */
  originProof(peerKey: string, ip: string): OriginProof | undefined {
    const s = this.nodeSigner();
    return s ? { pubKey: s.pubKey, ip, sig: s.sign(originText(peerKey, ip)) } : undefined;
  }

  /**
   * Whether the message origin `peerKey` is a listed node by its proof: null when it is (or membership is
   * open), else why not.
   */
  async checkOrigin(peerKey: string, proof: unknown): Promise<string | null> {
    if (this.o.mode === 'open') return null;
    const p = proof as OriginProof | undefined;
    if (!p || typeof p !== 'object' || typeof p.pubKey !== 'string' || typeof p.ip !== 'string' || typeof p.sig !== 'string') return 'no proof that its origin is a listed node';
    if (!signedBy(originText(peerKey, p.ip), p.pubKey, p.sig)) return 'its origin proof does not verify';
    const listed = await this.stillListed(p.pubKey, p.ip);
    if (listed === null) return 'the node list cannot be read';
    return listed ? null : `its origin ${p.pubKey.slice(0, 16)}… is not listed at ${p.ip.slice(0, 40)}`;
  }

  /** Whether an admitted peer is still listed: true/false from a list read now, null when it cannot be read. */
  async stillListed(pubKey: string, ip: string): Promise<boolean | null> {
    if (this.o.mode === 'open') return true;
    try {
      return listedFor(await this.nodes(false), pubKey, ip);
    } catch {
      return null;
    }
  }

  /**
   * The nodes to dial from the node list (read at most every `cacheMs`): every entry's `ip:port` (the API
   * port the reference uses when it names none), less this node's own entry, which gives this node's
   * address instead. Null when the list cannot be read or membership is open.
   */
  async listed(): Promise<{ addrs: string[]; own: { ip: string; port: number } | null } | null> {
    if (this.o.mode === 'open') return null;
    let nodes: unknown[];
    try {
      nodes = await this.nodes(false);
    } catch {
      return null;
    }
    const { entries } = this.parsed(nodes);
    const mine = this.pubKey?.toLowerCase();
    const own = entries.find((e) => mine && e.key === mine);
    return { addrs: entries.filter((e) => e !== own).map((e) => e.addr), own: own ? { ip: own.ip, port: own.port } : null };
  }

  /**
   * The list's entries parsed once per read of the list: a dial-back call (public) and every discovery
   * round look at all of them (about 13,000 on the reference's network).
   */
  private parsed(nodes: unknown[]) {
    if (this.parsedList?.nodes === nodes) return this.parsedList;
    const entries: { addr: string; ip: string; port: number; key: string }[] = [];
    for (const n of nodes as ListedNode[]) {
      const a = parseListed(n?.ip, DEFAULT_API_PORT);
      if (a) entries.push({ addr: formatAddr(a.ip, a.port), ip: a.ip, port: a.port, key: typeof n.pubkey === 'string' ? n.pubkey.toLowerCase() : '' });
    }
    this.parsedList = { nodes, entries, addrs: new Set(entries.map((e) => e.addr)) };
    return this.parsedList;
  }

  /**
   * Whether `addr` (`ip:port`) is a node of the list (any key), for a dial-back asked from that address.
   * Open membership: yes. Null when the list cannot be read.
   */
  async listsAddress(ip: string, port: number): Promise<boolean | null> {
    if (this.o.mode === 'open') return true;
    try {
      return this.parsed(await this.nodes(false)).addrs.has(formatAddr(ip, port));
    } catch {
      return null;
    }
  }
}
