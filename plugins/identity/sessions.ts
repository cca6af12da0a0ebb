/**
 * Sessions: created by a verified login, kept in the store (they survive a restart) and held in memory, so
 * an authenticated request costs a Map lookup and, for a new signature string, one SHA-256; never an ECDSA
 * recovery, never a store query.
 *
 * Bounded (issue 11: 30,000 throwaway logins kept 14 days of sessions): at most `perId` sessions per id and
 * `max` in all. Past either bound the oldest session goes: the id's own oldest for the per-id bound, the
 * oldest session of an ordinary user for the overall one; the operator's and the core team's sessions are
 * never evicted to make room for others (they are bounded per id only).
 *
 * The store keeps the SHA-256 of the session's signature, not the signature: the header's signature must
 * hash to it (so it is equal), and a copied data folder holds no usable credential.
 */
import type { Clock, Collection } from '../../core/plugin-api.ts';
import { GroupCommit } from './batch.ts';
import { sha256 } from './ids.ts';
import { Compactor, removeIn } from './purge.ts';

export interface SessionRecord {
  _id?: string;
  legacyid: string;
  loginPhrase: string;
  sigDigest: string;
  createdAt: number;
  expireAt: number;
}

export interface AuthHeader {
  legacyid: string;
  signature: string;
  loginPhrase: string;
}

export interface SessionLimits {
  max: number;
  perId: number;
  /** Ids whose sessions are never evicted for others' (the operator and the core team). */
  privileged: (legacyid: string) => boolean;
}

export const digestOf = (signature: string) => sha256(Buffer.from(signature, 'utf8')).toString('hex');

/** The signature a session was last proven with, kept in memory only (never in the store). */
const proven = new WeakMap<SessionRecord, string>();

function check(rec: SessionRecord | null, h: AuthHeader): { legacyid: string; loginPhrase: string } | null {
  if (!rec || rec.legacyid !== h.legacyid) return null;
  if (proven.get(rec) !== h.signature) {
    if (rec.sigDigest !== digestOf(h.signature)) return null;
    proven.set(rec, h.signature);
  }
  return { legacyid: rec.legacyid, loginPhrase: rec.loginPhrase };
}

export class SessionBook {
  /** Every live session by login phrase, in creation order (oldest first). */
  private readonly byPhrase = new Map<string, SessionRecord>();
  /** Each id's login phrases, oldest first. */
  private readonly byId = new Map<string, Set<string>>();
  private readonly inserts: GroupCommit<SessionRecord>;
  private readonly evictions: GroupCommit<string>;
  private readonly compactor: Compactor;

  constructor(
    private readonly store: Collection<SessionRecord>,
    private readonly clock: Clock,
    private readonly limits: SessionLimits,
  ) {
    this.compactor = new Compactor(store, () => this.byPhrase.size);
    this.inserts = new GroupCommit(async (recs) => {
      await store.insert(recs.map((r) => ({ ...r })));
      this.compactor.wrote(recs.length);
    });
    this.evictions = new GroupCommit(async (phrases) => this.compactor.wrote(await removeIn(store, 'loginPhrase', phrases)));
  }

  async init(): Promise<void> {
    await this.store.ensureIndex({ fieldName: 'loginPhrase', unique: true });
    // Earlier versions indexed these for store queries; sessions are now looked up in memory only, and
    // each index costs time at every start.
    for (const f of ['legacyid', 'expireAt']) await this.store.removeIndex(f).catch(() => undefined);
    const now = this.clock.now();
    const rows = (await this.store.find({})).sort((a, b) => a.createdAt - b.createdAt);
    const expired: string[] = [];
    for (const r of rows) {
      if (r.expireAt <= now) expired.push(r.loginPhrase);
      else this.add(r);
    }
    // The bounds may have been lowered since the sessions were stored (or an older version kept more).
    const drop = [...expired, ...this.overBounds()];
    // Not awaited: memory already holds only the live, bounded sessions, and the node answers meanwhile
    // (20,000 rows to drop after an upgrade took about 1.3 s). The first batch is queued at once, before
    // any later store operation; the next purge waits for the rest.
    this.settling = removeIn(this.store, 'loginPhrase', drop)
      .then((n) => this.compactor.wrote(n))
      .catch(() => undefined); // rows left behind are dropped again at the next start
  }

  /** The store removals started at load, until they are done. */
  private settling: Promise<void> = Promise.resolve();

  private add(rec: SessionRecord): void {
    this.byPhrase.set(rec.loginPhrase, rec);
    let set = this.byId.get(rec.legacyid);
    if (!set) this.byId.set(rec.legacyid, (set = new Set()));
    set.add(rec.loginPhrase);
  }

  private forget(loginPhrase: string): SessionRecord | undefined {
    const rec = this.byPhrase.get(loginPhrase);
    if (!rec) return undefined;
    this.byPhrase.delete(loginPhrase);
    const set = this.byId.get(rec.legacyid);
    set?.delete(loginPhrase);
    if (set?.size === 0) this.byId.delete(rec.legacyid);
    return rec;
  }

  /** Forget sessions past the bounds (oldest first, as the header comment says); returns their phrases. */
  private overBounds(legacyid?: string): string[] {
    const out: string[] = [];
    for (const id of legacyid !== undefined ? [legacyid] : [...this.byId.keys()]) {
      const set = this.byId.get(id);
      while (set && set.size > this.limits.perId) {
        const oldest = set.values().next().value as string;
        this.forget(oldest);
        out.push(oldest);
      }
    }
    if (this.byPhrase.size > this.limits.max) {
      for (const [phrase, rec] of this.byPhrase) {
        if (this.byPhrase.size <= this.limits.max) break;
        if (this.limits.privileged(rec.legacyid)) continue;
        this.forget(phrase);
        out.push(phrase);
      }
    }
    return out;
  }

  /** The live session of this phrase. */
  find(loginPhrase: string): SessionRecord | null {
    const rec = this.byPhrase.get(loginPhrase);
    return rec && rec.expireAt > this.clock.now() ? rec : null;
  }

  /**
   * The session the header names, if it is live and the header's id and signature are the session's.
   * The signature is compared with the one that last matched the stored digest, so a steady caller costs
   * a string comparison; a new or different signature is hashed and checked against the digest.
   */
  resolve(h: AuthHeader): { legacyid: string; loginPhrase: string } | null {
    return check(this.find(h.loginPhrase), h);
  }

  /** Store a new session (on disk before this resolves), then hold it, evicting what the bounds require. */
  async create(rec: SessionRecord, signature?: string): Promise<SessionRecord> {
    await this.inserts.add(rec);
    if (signature !== undefined) proven.set(rec, signature);
    this.add(rec);
    const evicted = this.overBounds(rec.legacyid);
    // Not awaited by the login: the evicted sessions are already gone from memory, where lookups happen;
    // a failed removal leaves rows that the next start drops again (bounds are applied at load).
    for (const p of evicted) this.evictions.add(p).catch(() => undefined);
    return rec;
  }

  /** Live sessions, of one id or of everyone, oldest first; `offset` and `limit` page through them. */
  list(legacyid?: string, offset = 0, limit = Infinity): SessionRecord[] {
    const now = this.clock.now();
    const out: SessionRecord[] = [];
    const phrases = legacyid !== undefined ? (this.byId.get(legacyid) ?? []) : this.byPhrase.keys();
    let skipped = 0;
    for (const p of phrases) {
      const rec = this.byPhrase.get(p)!;
      if (rec.expireAt <= now) continue;
      if (skipped++ < offset) continue;
      if (out.length >= limit) break;
      out.push(rec);
    }
    return out;
  }

  get size(): number {
    return this.byPhrase.size;
  }

  /**
   * Remove from the store first, then from memory (a failure leaves both as they were); and after the
   * inserts already under way, so a "log out everyone" also ends a login that was being written.
   */
  private async removePhrases(select: () => string[]): Promise<number> {
    await this.inserts.settled();
    const phrases = select();
    const n = await removeIn(this.store, 'loginPhrase', phrases);
    this.compactor.wrote(n);
    for (const p of phrases) this.forget(p);
    return n;
  }

  removePhrase(loginPhrase: string): Promise<number> {
    return this.removePhrases(() => (this.byPhrase.has(loginPhrase) ? [loginPhrase] : []));
  }

  removeId(legacyid: string): Promise<number> {
    return this.removePhrases(() => [...(this.byId.get(legacyid) ?? [])]);
  }

  removeAll(): Promise<number> {
    return this.removePhrases(() => [...this.byPhrase.keys()]);
  }

  async purge(): Promise<number> {
    await this.settling;
    const now = this.clock.now();
    const n = await this.removePhrases(() => [...this.byPhrase.values()].filter((r) => r.expireAt <= now).map((r) => r.loginPhrase));
    await this.compactor.maybeCompact();
    return n;
  }
}
