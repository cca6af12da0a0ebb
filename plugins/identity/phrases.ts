/**
 * Login phrases that carry their own proof. A phrase is the 13-digit millisecond time of issue, 21 random
 * characters from the CSPRNG (about 108 bits) and a 22-character MAC (HMAC-SHA256 with a node secret, about
 * 113 bits) over its kind (login or emergency), time and random part: 56 characters of [0-9a-z]. The node
 * knows a phrase is its own, how old it is and whether it is an emergency phrase from the phrase alone, so
 * issuing one writes nothing: a flood of anonymous requests cannot evict a phrase someone fetched (the
 * operator's emergency phrase included) and cannot grow the store. Only a used phrase needs a row (so it
 * logs in once), kept until the phrase's 15 minutes are over.
 *
 * `activeloginphrases` is served from a bounded record of issued phrases in memory (see `active`).
 */
import crypto from 'node:crypto';
import type { Clock, Collection } from '../../core/plugin-api.ts';
import { GroupCommit } from './batch.ts';
import { WindowLimiter, addressKey } from './limits.ts';
import { Compactor, removeIn } from './purge.ts';

export const PHRASE_TTL_MS = 15 * 60_000;
const RANDOM_CHARS = 21;
const MAC_CHARS = 22;
const PHRASE_LENGTH = 13 + RANDOM_CHARS + MAC_CHARS;
const CHARS = '0123456789abcdefghijklmnopqrstuvwxyz';
/** The form of every phrase (the 40-70 bound verifiers of other nodes apply); the manifest checks it too. */
export const PHRASE_FORM = /^\d{13}[0-9a-z]{27,57}$/;

export type PhraseKind = 'login' | 'emergency';

/** A used phrase (a row of the store), or an issued one as listed by activeloginphrases. */
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

function mac(key: Buffer, kind: PhraseKind, body: string): string {
  const h = crypto.createHmac('sha256', key).update(kind).update(':').update(body).digest();
  // 15 bytes (120 bits) reduced to 22 base-36 digits (36^22 is about 2^113.7).
  return (BigInt('0x' + h.subarray(0, 15).toString('hex')) % 36n ** BigInt(MAC_CHARS)).toString(36).padStart(MAC_CHARS, '0');
}

/** A phrase issued at `now` of `kind`, signed with `key`. */
export function newPhrase(now: number, key: Buffer, kind: PhraseKind = 'login'): string {
  const body = String(Math.floor(now)).padStart(13, '0') + randomChars(RANDOM_CHARS);
  return body + mac(key, kind, body);
}

/** The kind of a phrase this key issued, or null for any other string. */
export function phraseKind(phrase: string, key: Buffer): PhraseKind | null {
  if (phrase.length !== PHRASE_LENGTH || !PHRASE_FORM.test(phrase)) return null;
  const body = phrase.slice(0, 13 + RANDOM_CHARS);
  const given = Buffer.from(phrase.slice(13 + RANDOM_CHARS));
  for (const kind of ['login', 'emergency'] as const) if (crypto.timingSafeEqual(given, Buffer.from(mac(key, kind, body)))) return kind;
  return null;
}

/** The issue time written in a phrase's first 13 characters. */
export const phraseTime = (phrase: string) => Number(phrase.slice(0, 13));

export interface PhraseLimits {
  /** Issued phrases of each kind listed by activeloginphrases (the newest this many of the last 15 minutes). */
  listed: number;
  /** Phrases of each kind one address may be issued in 15 minutes. */
  perAddress: number;
  /** Used phrases remembered; past it the oldest is forgotten and phrases as old are refused (see `floor`). */
  maxUsed: number;
}

/** What a phrase is, for a login or a socket: null when this node did not issue it. */
export interface PhraseState {
  createdAt: number;
  expireAt: number;
  emergency: boolean;
  used: boolean;
}

interface Listed {
  createdAt: number;
  emergency: boolean;
}

export class PhraseBook {
  /** Issued phrases, newest last, for activeloginphrases only: dropping one never invalidates it. */
  private readonly listed = new Map<string, Listed>();
  private readonly listedEmergency = new Map<string, Listed>();
  /** Used phrases (rows of the store), in the order they were used. */
  private readonly used = new Map<string, PhraseRecord>();
  /** Unused rows a version before this one stored (it kept every issued phrase): valid until they expire. */
  private readonly stored = new Map<string, PhraseRecord>();
  /**
   * Phrases issued at or before this time are refused. It moves only when more than `maxUsed` phrases were
   * used within 15 minutes and the oldest used one had to be forgotten: without its row it could log in
   * again, so every phrase as old goes with it. Kept in the `state` collection across restarts.
   */
  private floor = 0;
  private floorSaved = 0;
  private readonly issueLimit: WindowLimiter;
  private readonly inserts: GroupCommit<PhraseRecord>;
  private readonly drops: GroupCommit<string>;
  private readonly compactor: Compactor;
  private key!: Buffer;

  constructor(
    private readonly store: Collection<PhraseRecord>,
    private readonly state: Collection<{ _id: string; value: any }>,
    private readonly clock: Clock,
    private readonly limits: PhraseLimits,
  ) {
    // Tracked addresses are bounded too: beyond 100,000 the oldest window is forgotten (its count restarts).
    this.issueLimit = new WindowLimiter(limits.perAddress, PHRASE_TTL_MS, 100_000, () => clock.now());
    this.compactor = new Compactor(store, () => this.used.size + this.stored.size);
    this.inserts = new GroupCommit(async (recs) => {
      await store.insert(recs.map((r) => ({ ...r })));
      this.compactor.wrote(recs.length);
    });
    this.drops = new GroupCommit(async (phrases) => {
      this.compactor.wrote(await store.remove({ loginPhrase: { $in: phrases } }, { multi: true }));
    });
  }

  async init(): Promise<void> {
    await this.store.ensureIndex({ fieldName: 'loginPhrase', unique: true });
    // Expired rows are found in memory; an index on expireAt only cost time at every start.
    await this.store.removeIndex('expireAt').catch(() => undefined);
    const key = await this.state.findOne({ _id: 'phraseKey' });
    if (key) this.key = Buffer.from(key.value, 'hex');
    else {
      this.key = crypto.randomBytes(32);
      await this.state.insert({ _id: 'phraseKey', value: this.key.toString('hex') });
    }
    this.floor = this.floorSaved = (await this.state.findOne({ _id: 'phraseFloor' }))?.value ?? 0;
    const now = this.clock.now();
    const rows = (await this.store.find({})).sort((a, b) => (a.usedAt ?? 0) - (b.usedAt ?? 0));
    const expired: string[] = [];
    for (const r of rows) {
      if (r.expireAt <= now) expired.push(r.loginPhrase);
      else (r.usedAt !== undefined ? this.used : this.stored).set(r.loginPhrase, r);
    }
    await removeIn(this.store, 'loginPhrase', expired);
    while (this.used.size > this.limits.maxUsed) this.forgetOldestUsed();
  }

  /**
   * A new phrase for the caller at `ip`; null when that address was issued its `perAddress` phrases of this
   * kind in the last 15 minutes. Nothing is written: the phrase proves itself.
   */
  issue(kind: PhraseKind, ip: string): string | null {
    if (!this.issueLimit.take(`${kind} ${addressKey(ip)}`)) return null;
    const now = this.clock.now();
    const phrase = newPhrase(now, this.key, kind);
    const list = kind === 'emergency' ? this.listedEmergency : this.listed;
    while (list.size >= this.limits.listed) list.delete(list.keys().next().value as string);
    list.set(phrase, { createdAt: now, emergency: kind === 'emergency' });
    return phrase;
  }

  /** What the phrase is, or null when this node did not issue it. Expiry is the caller's to judge. */
  get(phrase: string): PhraseState | null {
    const row = this.used.get(phrase) ?? this.stored.get(phrase);
    if (row) return { createdAt: row.createdAt, expireAt: row.expireAt, emergency: !!row.emergency, used: row.usedAt !== undefined };
    const kind = phraseKind(phrase, this.key);
    if (!kind) return null;
    const t = phraseTime(phrase);
    // Older than the floor: its row may have been forgotten, so it counts as expired.
    return { createdAt: t, expireAt: t <= this.floor ? t : t + PHRASE_TTL_MS, emergency: kind === 'emergency', used: false };
  }

  /**
   * Mark the phrase used, in memory at once (two logins racing on one phrase see each other); false when
   * another login claimed it first. `persistClaim` then writes it, so a restart cannot make it usable again.
   */
  claim(phrase: string): boolean {
    const s = this.get(phrase);
    if (!s || s.used) return false;
    while (this.used.size >= this.limits.maxUsed) this.forgetOldestUsed();
    const rec: PhraseRecord = { loginPhrase: phrase, createdAt: s.createdAt, expireAt: s.expireAt, usedAt: this.clock.now() };
    if (s.emergency) rec.emergency = true;
    const row = this.stored.get(phrase);
    if (row) {
      rec._id = row._id; // a stored row: updated in place
      this.stored.delete(phrase);
    }
    this.used.set(phrase, rec);
    return true;
  }

  async persistClaim(phrase: string): Promise<void> {
    const rec = this.used.get(phrase);
    if (!rec) return;
    if (rec._id) await this.store.update({ _id: rec._id }, { $set: { usedAt: rec.usedAt } });
    else await this.inserts.add(rec);
    if (this.floor !== this.floorSaved) {
      this.floorSaved = this.floor;
      await this.state.update({ _id: 'phraseFloor' }, { _id: 'phraseFloor', value: this.floor }, { upsert: true });
    }
  }

  private forgetOldestUsed(): void {
    const [phrase, rec] = this.used.entries().next().value as [string, PhraseRecord];
    this.used.delete(phrase);
    this.floor = Math.max(this.floor, rec.createdAt);
    this.drops.add(phrase).catch(() => undefined); // a failed removal leaves a row the purge removes
  }

  /**
   * Phrases issued less than 15 minutes ago, used or not (oldest first): every phrase of that time as long
   * as fewer than `listed` phrases of each kind were issued in it, else the newest that many of each kind
   * (each kind has its own record, so a flood of login phrases cannot push out the emergency ones), plus
   * every used one. Issued phrases are listed from memory: after a restart the
   * list starts again (phrases issued before it still log in; used ones are listed from the store).
   */
  active(): PhraseRecord[] {
    const now = this.clock.now();
    const out = new Map<string, PhraseRecord>();
    for (const list of [this.listed, this.listedEmergency])
      for (const [loginPhrase, l] of list) {
        if (l.createdAt + PHRASE_TTL_MS <= now || l.createdAt <= this.floor) continue;
        const rec: PhraseRecord = { loginPhrase, createdAt: l.createdAt, expireAt: l.createdAt + PHRASE_TTL_MS };
        if (l.emergency) rec.emergency = true;
        out.set(loginPhrase, rec);
      }
    for (const map of [this.stored, this.used]) for (const [p, r] of map) if (r.expireAt > now) out.set(p, r);
    return [...out.values()].sort((a, b) => a.createdAt - b.createdAt);
  }

  /** Forget what has expired (memory at once, the store in small batches) and keep the file compact. */
  async purge(): Promise<number> {
    const now = this.clock.now();
    for (const list of [this.listed, this.listedEmergency])
      for (const [k, l] of list) {
        if (l.createdAt + PHRASE_TTL_MS > now) break; // in issue order: the rest are newer
        list.delete(k);
      }
    const expired: string[] = [];
    for (const map of [this.used, this.stored])
      for (const [k, r] of map)
        if (r.expireAt <= now) {
          map.delete(k);
          expired.push(k);
        }
    this.issueLimit.sweep();
    const n = await removeIn(this.store, 'loginPhrase', expired);
    this.compactor.wrote(n);
    await this.compactor.maybeCompact();
    return n;
  }

  /** Sizes, for tests and the log. */
  counts() {
    return { listed: this.listed.size + this.listedEmergency.size, used: this.used.size, stored: this.stored.size, addresses: this.issueLimit.size };
  }
}
