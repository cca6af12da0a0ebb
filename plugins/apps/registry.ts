/**
 * The app registry: signed registration and update messages kept as temporary messages (hash = SHA-256
 * hex of type + version + JSON(spec) + timestamp + signature), made permanent by a confirmed payment, and
 * the global specification of each app derived from its permanent messages in chain order. Dropping a
 * payment (a reorganisation) derives the app again without it.
 */
import crypto from 'node:crypto';
import { ApiError, type Clock, type Collection } from '../../core/plugin-api.ts';

/** Blocks an app lives without an `expire` of its own (v1-5, and the v6+ default). */
export const DEFAULT_EXPIRE = 22_000;

/** The height from which an app is no longer global: its last paid message's height plus its `expire`. */
export const expireHeightOf = (height: number, spec: Record<string, any>) => height + (Number.isInteger(spec.expire) ? spec.expire : DEFAULT_EXPIRE);

export interface AppMessage {
  type: string;
  version: number;
  appSpecification: Record<string, any>;
  timestamp: number;
  signature: string;
}

export interface TemporaryMessage extends AppMessage {
  hash: string;
  /** Who signed: the owner for a registration, the then-current owner for an update. */
  signer: string;
  receivedAt: number;
  expireAt: number;
}

export interface PermanentMessage extends AppMessage {
  hash: string;
  signer: string;
  txid: string;
  height: number;
  valueSat: string;
}

export interface GlobalSpec {
  name: string;
  owner: string;
  originalOwner: string;
  hash: string;
  height: number;
  /** The message hashes of the app in chain order. */
  hashes: string[];
  appSpecification: Record<string, any>;
  /** `height + expire`: from this chain height on the app has expired and is no longer global. */
  expireHeight: number;
}

export const REGISTER_TYPES = ['coreappregister', 'legacyappregister'];
export const UPDATE_TYPES = ['coreappupdate', 'legacyappupdate'];

/** What the owner signs (key order of the spec as sent). */
export const signedText = (m: AppMessage) => m.type + m.version + JSON.stringify(m.appSpecification) + m.timestamp;
export const messageHash = (m: AppMessage) => crypto.createHash('sha256').update(signedText(m) + m.signature).digest('hex');

function strip<T>(d: T | null): T | null {
  if (!d) return d;
  const { _id, ...rest } = d as any;
  return rest as T;
}

export interface RegistryStores {
  temporary: Collection<TemporaryMessage>;
  permanent: Collection<PermanentMessage>;
  specs: Collection<GlobalSpec>;
}

export class Registry {
  constructor(
    private readonly s: RegistryStores,
    private readonly clock: Clock,
    private readonly verify: (message: string, id: string, signature: string) => boolean,
    private readonly temporaryMs: number,
    /** The chain height the explorer has scanned, or null (then nothing counts as expired). */
    private readonly tip: () => number | null = () => null,
  ) {}

  async init(): Promise<void> {
    await Promise.all([
      this.s.temporary.ensureIndex({ fieldName: 'hash', unique: true }),
      this.s.permanent.ensureIndex({ fieldName: 'hash', unique: true }),
      this.s.specs.ensureIndex({ fieldName: 'name', unique: true }),
    ]);
  }

  /** Whether a global spec has expired at the scanned height. */
  expired(g: GlobalSpec): boolean {
    const tip = this.tip();
    return tip !== null && tip >= (g.expireHeight ?? expireHeightOf(g.height, g.appSpecification));
  }

  /** A registered app whose `expire` has run out (the node removes it where it runs), or null. */
  async expiredSpec(name: string): Promise<GlobalSpec | null> {
    const g = await this.stored(name);
    return g && this.expired(g) ? g : null;
  }

  /**
   * Check the signature and freshness of a message whose specification already passed its checks, and keep
   * it as a temporary message. `kind` is fixed by the route. Answers the hash to pay.
   */
  async submit(m: AppMessage, kind: 'register' | 'update'): Promise<string> {
    const types = kind === 'register' ? REGISTER_TYPES : UPDATE_TYPES;
    if (!types.includes(m.type)) throw new ApiError(400, 'ValidationError', `Invalid message: type: must be ${types[0]}`);
    const now = this.clock.now();
    // Reference window: an hour back, five minutes ahead.
    if (m.timestamp < now - 3600_000 || m.timestamp > now + 300_000) throw new ApiError(400, 'ValidationError', 'Invalid message: timestamp: must be within the last hour (and at most 5 minutes ahead)');
    const name: string = m.appSpecification.name;
    const current = await this.spec(name);
    let signer: string;
    if (kind === 'register') {
      if (current) throw new ApiError(409, 'AppExists', `Application ${name} is already registered`);
      signer = m.appSpecification.owner;
    } else {
      if (!current) throw new ApiError(404, 'NotFound', `Application ${name} not found`);
      // An update is signed by the current owner, who may hand the app to a new owner in it.
      signer = current.owner;
      if (current.appSpecification.version > m.appSpecification.version) throw new ApiError(400, 'ValidationError', `Invalid specification: version: must not be lower than the registered ${current.appSpecification.version}`);
    }
    if (!this.verify(signedText(m), signer, m.signature)) throw new ApiError(400, 'InvalidSignature', `Invalid signature: the message is not signed by ${kind === 'update' ? 'the current owner ' : ''}${signer}`);
    const hash = messageHash(m);
    // The spec passed checkSpecification (no repoauth: repoauth.ts); it is kept exactly as signed.
    const doc: TemporaryMessage = { type: m.type, version: m.version, appSpecification: m.appSpecification, timestamp: m.timestamp, signature: m.signature, hash, signer, receivedAt: now, expireAt: now + this.temporaryMs };
    await this.s.temporary.update({ hash }, doc, { upsert: true });
    return hash;
  }

  async temporary(hash?: string): Promise<TemporaryMessage[]> {
    const now = this.clock.now();
    const docs = await this.s.temporary.find(hash ? { hash } : {});
    return docs.filter((d) => d.expireAt > now).map((d) => strip(d)!);
  }

  async purgeTemporary(): Promise<void> {
    await this.s.temporary.remove({ expireAt: { $lte: this.clock.now() } }, { multi: true });
  }

  async permanent(filter: { hash?: string; owner?: string; appname?: string } = {}): Promise<PermanentMessage[]> {
    const q: Record<string, unknown> = {};
    if (filter.hash) q.hash = filter.hash;
    if (filter.owner) q['appSpecification.owner'] = filter.owner;
    if (filter.appname) q['appSpecification.name'] = filter.appname;
    const docs = await this.s.permanent.find(q);
    return docs.sort((a, b) => a.height - b.height || a.timestamp - b.timestamp).map((d) => strip(d)!);
  }

  async globals(filter: { hash?: string; owner?: string; appname?: string } = {}): Promise<GlobalSpec[]> {
    const q: Record<string, unknown> = {};
    if (filter.hash) q.hash = filter.hash;
    if (filter.owner) q.owner = filter.owner;
    if (filter.appname) q.name = filter.appname;
    return (await this.s.specs.find(q))
      .filter((d) => !this.expired(d))
      .map((d) => strip(d)!)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The global spec of an app (expired apps are not global). */
  async spec(name: string): Promise<GlobalSpec | null> {
    const g = await this.stored(name);
    return g && !this.expired(g) ? g : null;
  }

  /** The derived spec record, expired or not. */
  private async stored(name: string): Promise<GlobalSpec | null> {
    if (typeof name !== 'string' || !name) return null;
    // Names are unique ignoring case, as the reference looks them up.
    const exact = await this.s.specs.findOne({ name });
    if (exact) return strip(exact);
    const all = await this.s.specs.find({});
    return strip(all.find((d) => d.name.toLowerCase() === name.toLowerCase()) ?? null);
  }

  async owner(name: string): Promise<string | null> {
    return (await this.spec(name))?.owner ?? null;
  }

  /**
   * A confirmed payment of `valueSat` for `hash` at `height`. Answers what happened; only `permanent`
   * changes the registry. `price` says what the message's specification costs.
   */
  async confirm(p: { hash: string; txid: string; height: number; valueSat: bigint }, price: (spec: Record<string, any>) => bigint): Promise<'permanent' | 'unknown' | 'underpaid' | 'known'> {
    if (await this.s.permanent.findOne({ hash: p.hash })) return 'known';
    const temp = (await this.s.temporary.findOne({ hash: p.hash })) as TemporaryMessage | null;
    if (!temp) return 'unknown';
    if (p.valueSat < price(temp.appSpecification)) return 'underpaid';
    const { _id, receivedAt, expireAt, ...msg } = temp as any;
    await this.s.permanent.insert({ ...msg, txid: p.txid, height: p.height, valueSat: p.valueSat.toString() });
    await this.derive(temp.appSpecification.name);
    return 'permanent';
  }

  /** A payment is no longer on the chain: its message is temporary again (until it expires). */
  async drop(txid: string): Promise<string[]> {
    const gone = await this.s.permanent.find({ txid });
    if (!gone.length) return [];
    await this.s.permanent.remove({ txid }, { multi: true });
    for (const g of gone as PermanentMessage[]) await this.derive(g.appSpecification.name);
    return gone.map((g) => g.hash);
  }

  /** The app's global spec from its permanent messages: the first registration, then updates by the owner of the time. */
  private async derive(name: string): Promise<void> {
    const msgs = await this.permanent({ appname: name });
    let state: GlobalSpec | null = null;
    for (const m of msgs) {
      // An app whose expire ran out before this message is gone: only a new registration brings the name back.
      const lapsed = state !== null && m.height >= (state as GlobalSpec).expireHeight;
      if (!state || lapsed) {
        if (!REGISTER_TYPES.includes(m.type)) continue;
        state = { name, owner: m.appSpecification.owner, originalOwner: m.appSpecification.owner, hash: m.hash, height: m.height, hashes: [m.hash], appSpecification: m.appSpecification, expireHeight: expireHeightOf(m.height, m.appSpecification) };
      } else if (UPDATE_TYPES.includes(m.type) && m.signer === (state as GlobalSpec).owner) {
        // An update starts the expiry count again from its own block, with its own `expire`.
        state = { ...(state as GlobalSpec), owner: m.appSpecification.owner, hash: m.hash, height: m.height, hashes: [...(state as GlobalSpec).hashes, m.hash], appSpecification: m.appSpecification, expireHeight: expireHeightOf(m.height, m.appSpecification) };
      }
    }
    if (state) await this.s.specs.update({ name }, state, { upsert: true });
    else await this.s.specs.remove({ name }, { multi: true });
  }
}
