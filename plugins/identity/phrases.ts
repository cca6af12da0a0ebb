/**
 * Login phrases: a 13-digit millisecond timestamp, then 43 random characters of [0-9a-z] from the CSPRNG
 * (56 characters, about 222 random bits). Each is stored and valid 15 minutes; a login claims it once.
 * The live ones are mirrored in a Map (lookups per login and per websocket need no store query) and the
 * store keeps them across a restart. The number of live phrases is bounded: an anonymous caller cannot
 * grow the store without limit, the oldest phrase is dropped instead.
 */
import crypto from 'node:crypto';
import type { Clock, Collection } from '../../core/plugin-api.ts';
import { GroupCommit } from './batch.ts';

export const PHRASE_TTL_MS = 15 * 60_000;
const RANDOM_CHARS = 43;
const CHARS = '0123456789abcdefghijklmnopqrstuvwxyz';
/** The form of every phrase this node issues (and the 40-70 bound verifiers of other nodes apply). */
export const PHRASE_FORM = /^\d{13}[0-9a-z]{27,57}$/;

export interface PhraseRecord {
  _id?: string;
  loginPhrase: string;
  createdAt: number;
  expireAt: number;
  /** Issued by /id/emergencyphrase: only the operator and the core team may log in with it. */
  emergency?: boolean;
  /** Set once, by the login that claimed the phrase. */
  usedAt?: number;
}

export function randomChars(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of crypto.randomBytes(n * 2)) {
      // 252 = 7 * 36: rejecting the top 4 byte values keeps every character equally likely.
      if (b < 252 && out.length < n) out += CHARS[b % 36];
    }
  }
  return out;
}

export function newPhrase(now: number): string {
  return String(Math.floor(now)).padStart(13, '0') + randomChars(RANDOM_CHARS);
}

/** The issue time written in a phrase's first 13 characters. */
export const phraseTime = (phrase: string) => Number(phrase.slice(0, 13));

export class PhraseBook {
  private readonly live = new Map<string, PhraseRecord>();
  private readonly inserts: GroupCommit<PhraseRecord>;
  private readonly claims: GroupCommit<string>;

  constructor(
    private readonly store: Collection<PhraseRecord>,
    private readonly clock: Clock,
    private readonly max: number,
  ) {
    this.inserts = new GroupCommit((recs) => store.insert(recs.map((r) => ({ ...r }))));
    this.claims = new GroupCommit((phrases) => store.update({ loginPhrase: { $in: phrases } }, { $set: { usedAt: clock.now() } }, { multi: true }));
  }

  async init(): Promise<void> {
    await this.store.ensureIndex({ fieldName: 'loginPhrase', unique: true });
    await this.store.ensureIndex({ fieldName: 'expireAt' });
    await this.purge();
    const rows = await this.store.find({}).sort({ createdAt: 1 });
    for (const r of rows) this.live.set(r.loginPhrase, r);
  }

  async issue(emergency = false): Promise<PhraseRecord> {
    const now = this.clock.now();
    const rec: PhraseRecord = { loginPhrase: newPhrase(now), createdAt: now, expireAt: now + PHRASE_TTL_MS };
    if (emergency) rec.emergency = true;
    while (this.live.size >= this.max) {
      const oldest = this.live.keys().next().value as string;
      this.live.delete(oldest);
      // Not awaited: the oldest phrase is long on disk, and a failure only leaves a row the purge removes.
      this.store.remove({ loginPhrase: oldest }, {}).catch(() => undefined);
    }
    this.live.set(rec.loginPhrase, rec);
    await this.inserts.add(rec);
    return rec;
  }

  get(phrase: string): PhraseRecord | undefined {
    return this.live.get(phrase);
  }

  /**
   * Mark the phrase used, in memory at once (two logins racing on one phrase see each other); false when
   * another login claimed it first. `persistClaim` then writes it, so a restart cannot make it usable again.
   */
  claim(phrase: string): boolean {
    const rec = this.live.get(phrase);
    if (!rec || rec.usedAt !== undefined) return false;
    rec.usedAt = this.clock.now();
    return true;
  }

  persistClaim(phrase: string): Promise<void> {
    return this.claims.add(phrase);
  }

  /** Phrases issued less than 15 minutes ago, used or not (oldest first). */
  active(): PhraseRecord[] {
    const now = this.clock.now();
    return [...this.live.values()].filter((r) => r.expireAt > now);
  }

  async purge(): Promise<number> {
    const now = this.clock.now();
    for (const [k, r] of this.live) if (r.expireAt <= now) this.live.delete(k);
    return this.store.remove({ expireAt: { $lte: now } }, { multi: true });
  }
}
