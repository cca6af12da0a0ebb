/**
 * Signatures handed over by POST /id/providesign, kept 15 minutes. One per login phrase (a phrase logs in
 * once, and the same body again is a retry of that login): a replay finds the record and adds nothing
 * (issue 11: 100,000 replays stored 100,000 records). The store holds the signature's SHA-256, as sessions
 * do; the answer carries the signature the caller sent, equal to the stored one by the digest.
 */
import type { Clock, Collection } from '../../core/plugin-api.ts';
import { Compactor, removeIn } from './purge.ts';
import { digestOf } from './sessions.ts';

export const SIGN_TTL_MS = 15 * 60_000;

export interface SignRecord {
  _id?: string;
  sigDigest: string;
  identifier: string;
  loginPhrase: string;
  createdAt: number;
  expiredAt: number;
}

/** The answer's shape (spec: signature, identifier, createdAt, expiredAt, _id). */
export interface SignView {
  signature: string;
  identifier: string;
  createdAt: string;
  expiredAt: string;
  _id?: string;
}

export class SignBook {
  /** When each record expires, by login phrase, in the order they were stored (so, of expiry). */
  private readonly expiry = new Map<string, number>();
  private readonly compactor: Compactor;

  constructor(
    private readonly store: Collection<SignRecord>,
    private readonly clock: Clock,
  ) {
    this.compactor = new Compactor(store, () => this.expiry.size);
  }

  async init(): Promise<void> {
    const now = this.clock.now();
    const rows = (await this.store.find({}, { loginPhrase: 1, expiredAt: 1, sigDigest: 1 })).sort((a, b) => a.expiredAt - b.expiredAt);
    // Rows of earlier versions (one per request, the signature in clear) go: they were kept 15 minutes only.
    const drop = rows.filter((r) => r.expiredAt <= now || r.sigDigest === undefined);
    if (drop.length) await this.store.remove({ _id: { $in: drop.map((r) => r._id) } }, { multi: true });
    for (const r of rows) if (r.expiredAt > now && r.sigDigest !== undefined) this.expiry.set(r.loginPhrase, r.expiredAt);
    await this.store.ensureIndex({ fieldName: 'loginPhrase', unique: true });
    await this.store.removeIndex('expiredAt').catch(() => undefined);
  }

  /** The record of this login (stored on the first call, found on every later one). */
  async provide(legacyid: string, loginPhrase: string, signature: string): Promise<SignView> {
    const view = (r: SignRecord): SignView => ({ signature, identifier: r.identifier, createdAt: iso(r.createdAt), expiredAt: iso(r.expiredAt), _id: r._id });
    const known = await this.store.findOne({ loginPhrase });
    if (known) return view(known);
    const now = this.clock.now();
    try {
      const rec = await this.store.insert({ sigDigest: digestOf(signature), identifier: legacyid, loginPhrase, createdAt: now, expiredAt: now + SIGN_TTL_MS });
      this.expiry.set(loginPhrase, rec.expiredAt);
      this.compactor.wrote(1);
      return view(rec);
    } catch (e) {
      // The same body sent twice at once: the unique index let one insert through.
      const other = await this.store.findOne({ loginPhrase });
      if (other) return view(other);
      throw e;
    }
  }

  /** Remove the expired records in small batches; rewrite the file once it is mostly dead lines. */
  async purge(): Promise<number> {
    const now = this.clock.now();
    const expired: string[] = [];
    for (const [p, t] of this.expiry) {
      if (t > now) break;
      expired.push(p);
    }
    for (const p of expired) this.expiry.delete(p);
    const n = await removeIn(this.store, 'loginPhrase', expired);
    this.compactor.wrote(n);
    await this.compactor.maybeCompact();
    return n;
  }
}

const iso = (ms: number) => new Date(ms).toISOString();
