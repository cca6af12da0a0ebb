/**
 * The caller's own signature on a global command, checked by every node before it acts: the node the
 * caller called (before it runs anything or sends the command) and each node that receives it.
 *
 * The caller (the app's owner or a core-team id, whichever the route's session is) signs with its wallet
 * `globalCommandText` (api.ts): the verb, the app, the target (`app` or `component_app`), force and a
 * timestamp in ms. A command is taken when, in this order:
 * 1. it carries an integer `timestamp` and a `signature`;
 * 2. the timestamp is within `maxAgeMs` of this node's clock, either way (stale commands, and commands
 *    stamped far ahead to outlive the replay memory, are refused);
 * 3. the signature is the caller's signature of that text (bitcoin-style or ethereum, identity plugin);
 * 4. on this node's own records the caller may act (the app's owner or a core-team id);
 * 5. it was not taken before: the node remembers each taken command (signer and signed text, not the
 *    signature string, which ECDSA malleability can vary) until its timestamp is `maxAgeMs` old. The memory
 *    is kept in the plugin's `commands` store, so a restart does not reopen the window.
 * A listed peer therefore cannot make a node act for an owner who did not sign that very command, cannot
 * change what was signed, and cannot replay what was.
 */
import crypto from 'node:crypto';
import type { Collection, Log } from '../../core/plugin-api.ts';
import { globalCommandText, type GlobalCommand } from './api.ts';

/** Commands remembered at most: past it new ones are refused rather than older ones forgotten (a forgotten one could be replayed). */
const MAX_REMEMBERED = 100_000;

export interface Remembered {
  key: string;
  expireAt: number;
}

export type SignedFields = Pick<GlobalCommand, 'verb' | 'app' | 'caller' | 'force' | 'timestamp' | 'signature'>;

export class CommandSignatures {
  private readonly seen = new Map<string, number>();
  private lastSweep = 0;

  constructor(
    /** A wallet signature check (identity plugin), or undefined when the identity plugin is not enabled. */
    private readonly verify: () => ((message: string, id: string, signature: string) => boolean) | undefined,
    private readonly maxAgeMs: number,
    private readonly store: Collection<Remembered>,
    private readonly now: () => number,
    private readonly log: Log,
  ) {}

  /** Load what was taken before a restart (and drop what has expired). */
  async init(): Promise<void> {
    await this.store.ensureIndex({ fieldName: 'key', unique: true });
    const now = this.now();
    await this.store.remove({ expireAt: { $lte: now } }, { multi: true });
    for (const r of await this.store.find({})) this.seen.set(r.key, r.expireAt);
  }

  /**
   * Take the command (remembered from now on) and answer its key, or answer why not (`refused`), the
   * first word naming the field at fault. `mayAct` says whether the signer may run the verb here.
   */
  take(c: SignedFields, mayAct: (id: string) => boolean): { key: string } | { refused: string } {
    const now = this.now();
    if (!Number.isInteger(c.timestamp)) return { refused: 'timestamp: a global command carries the time it was signed (ms since the epoch)' };
    if (typeof c.signature !== 'string' || !c.signature) return { refused: `signature: a global command carries ${c.caller}'s wallet signature of the command` };
    const age = now - c.timestamp;
    if (age > this.maxAgeMs) return { refused: `timestamp: signed ${Math.round(age / 1000)} s ago, older than the ${this.maxAgeMs / 1000} s a global command is valid` };
    if (-age > this.maxAgeMs) return { refused: `timestamp: ${Math.round(-age / 1000)} s ahead of this node's clock, more than the ${this.maxAgeMs / 1000} s allowed` };
    const verify = this.verify();
    if (!verify) return { refused: 'signature: this node cannot check wallet signatures (the identity plugin is not enabled)' };
    const text = globalCommandText(c);
    if (!verify(text, c.caller, c.signature)) return { refused: `signature: not ${c.caller}'s signature of this command` };
    if (!mayAct(c.caller)) return { refused: `${c.caller} may not ${c.verb} ${c.app} on this node` };
    this.sweep(now);
    const key = crypto.createHash('sha256').update(`${c.caller}\n${text}`).digest('hex');
    if (this.seen.has(key)) return { refused: 'signature: this signed command was already taken (a replay); sign it again with a new timestamp' };
    if (this.seen.size >= MAX_REMEMBERED) return { refused: `too many global commands in the last ${this.maxAgeMs / 1000} s; try again later` };
    const expireAt = c.timestamp + this.maxAgeMs;
    this.seen.set(key, expireAt);
    this.store.insert({ key, expireAt }).catch((e) => this.log.warn({ err: (e as Error).message }, 'peers: a taken global command was not stored'));
    return { key };
  }

  /** Forget a taken command that was not carried out (the called node was busy): the caller may send it again. */
  release(key: string): void {
    this.seen.delete(key);
    this.store.remove({ key }, {}).catch(() => undefined);
  }

  private sweep(now: number) {
    if (now - this.lastSweep < 10_000) return;
    this.lastSweep = now;
    for (const [k, exp] of this.seen) if (exp <= now) this.seen.delete(k);
    this.store.remove({ expireAt: { $lte: now } }, { multi: true }).catch(() => undefined);
  }
}
