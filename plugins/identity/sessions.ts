/**
 * Sessions: created by a verified login, kept in the store (they survive a restart) and looked up per
 * request from a memory cache keyed by login phrase, so an authenticated request costs a Map lookup and one
 * SHA-256, never an ECDSA recovery.
 *
 * The store keeps the SHA-256 of the session's signature, not the signature: the header's signature must
 * hash to it (so it is equal), and a copied data folder holds no usable credential.
 */
import type { Clock, Collection } from '../../core/plugin-api.ts';
import { GroupCommit } from './batch.ts';
import { sha256 } from './ids.ts';

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

export const digestOf = (signature: string) => sha256(Buffer.from(signature, 'utf8')).toString('hex');

/** The signature a cached session was last proven with, kept in memory only (never in the store). */
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
  private readonly cache = new Map<string, SessionRecord>();
  /** Bumped by every removal: a store read that started before one may not refill the cache. */
  private epoch = 0;
  private readonly inserts: GroupCommit<SessionRecord>;

  constructor(
    private readonly store: Collection<SessionRecord>,
    private readonly clock: Clock,
    private readonly maxCached: number,
  ) {
    this.inserts = new GroupCommit((recs) => store.insert(recs.map((r) => ({ ...r }))));
  }

  async init(): Promise<void> {
    await this.store.ensureIndex({ fieldName: 'loginPhrase', unique: true });
    await this.store.ensureIndex({ fieldName: 'legacyid' });
    await this.store.ensureIndex({ fieldName: 'expireAt' });
    await this.purge();
  }

  private remember(rec: SessionRecord): void {
    if (this.cache.size >= this.maxCached) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(rec.loginPhrase, rec);
  }

  /** The live session of this phrase (cache first, then the store). */
  find(loginPhrase: string): SessionRecord | null | Promise<SessionRecord | null> {
    const hit = this.cache.get(loginPhrase);
    if (hit) return hit.expireAt > this.clock.now() ? hit : null;
    const epoch = this.epoch;
    return this.store.findOne({ loginPhrase }).then((rec) => {
      if (!rec || rec.expireAt <= this.clock.now()) return null;
      if (epoch === this.epoch) this.remember(rec);
      return rec;
    });
  }

  /**
   * The session the header names, if it is live and the header's id and signature are the session's.
   * The signature is compared with the one that last matched the stored digest, so a steady caller costs
   * a string comparison; a new or different signature is hashed and checked against the digest.
   */
  resolve(h: AuthHeader): { legacyid: string; loginPhrase: string } | null | Promise<{ legacyid: string; loginPhrase: string } | null> {
    const found = this.find(h.loginPhrase);
    return found instanceof Promise ? found.then((rec) => check(rec, h)) : check(found, h);
  }

  /** Store a new session (on disk before this resolves) and cache it. */
  async create(rec: SessionRecord, signature?: string): Promise<SessionRecord> {
    await this.inserts.add(rec);
    if (signature !== undefined) proven.set(rec, signature);
    this.remember(rec);
    return rec;
  }

  /** Live sessions, of one id or of everyone, oldest first. */
  async list(legacyid?: string): Promise<SessionRecord[]> {
    const q: Record<string, unknown> = { expireAt: { $gt: this.clock.now() } };
    if (legacyid !== undefined) q.legacyid = legacyid;
    return this.store.find(q).sort({ createdAt: 1 });
  }

  /**
   * Remove from the store first, then from the cache, so no lookup can bring a removed session back; and
   * after the inserts already under way, so a "log out everyone" also ends a login that was being written.
   */
  private async removeWhere(q: Record<string, unknown>, evict: () => void): Promise<number> {
    await this.inserts.settled();
    this.epoch++;
    const n = await this.store.remove(q, { multi: true });
    this.epoch++;
    evict();
    return n;
  }

  private evictWhere(test: (r: SessionRecord) => boolean): void {
    for (const [k, r] of this.cache) if (test(r)) this.cache.delete(k);
  }

  removePhrase(loginPhrase: string): Promise<number> {
    return this.removeWhere({ loginPhrase }, () => this.cache.delete(loginPhrase));
  }

  removeId(legacyid: string): Promise<number> {
    return this.removeWhere({ legacyid }, () => this.evictWhere((r) => r.legacyid === legacyid));
  }

  removeAll(): Promise<number> {
    return this.removeWhere({}, () => this.cache.clear());
  }

  purge(): Promise<number> {
    const now = this.clock.now();
    return this.removeWhere({ expireAt: { $lte: now } }, () => this.evictWhere((r) => r.expireAt <= now));
  }
}
