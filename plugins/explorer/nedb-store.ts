/**
 * The explorer index in one embedded nedb collection.
 *
 * Crash safety without multi-document transactions. nedb keeps a collection in memory and appends every
 * operation to its file, one operation at a time, in the order they are issued; a kill leaves a prefix of
 * the operations. A run of consecutive blocks (one block at the tip, more while catching up) is written as:
 *   1. one journal record `j:<height>` per block: the ids of the outputs and transaction entries it adds,
 *      and the full documents of the outputs it spends (its undo data);
 *   2. the spent outputs removed; 3. the new outputs and transaction entries inserted;
 *   4. the tip record `{height, hash}` moved to the last block (the commit point);
 *   5. journal records older than the undo depth pruned.
 * Every document is keyed by what it is (`u:<txid>:<vout>`, `t:<address>:<txid>`), so an output cannot be
 * stored twice and a balance (the sum of an address's outputs) cannot count one twice. At open, journal
 * records above the tip belong to a run cut short: each is reverted (newest first) and deleted, and the
 * scanner fetches those blocks again. Undoing the tip block (a reorg, a rescan) is the same revert: mark
 * the record, revert it, move the tip down (the commit point), delete the record; a record still marked at
 * the tip is reverted again at open. Reverting is idempotent: remove what the block added, put back what
 * it spent.
 * Readers and the writer share a lock so an answer never sees half a run.
 */
import type { Collection } from '../../core/plugin-api.ts';
import { IndexInconsistentError, type ExplorerStore, type ParsedBlock, type Tip, type TxRef, type Utxo } from './store.ts';

// Documents are kept small (every field is copied, indexed or serialised on each write): what the id says
// is not repeated. Only outputs carry `a`, so the address index holds outputs only; an address's transaction
// entries are found by the id range `t:<address>:`.
/** `u:<txid>:<vout>`: an unspent output. */
interface UtxoDoc {
  _id: string;
  a: string;
  h: number;
  v: number;
  s: string;
  cb: boolean;
}
/** `t:<address>:<txid>`: the transaction touches the address. */
interface TxDoc {
  _id: string;
  h: number;
}
/** `j:<height>`: what a block did. Packed into two strings, which nedb copies and writes far faster than
 * arrays of documents. */
interface JournalDoc {
  _id: string;
  h: number;
  hash: string;
  prev: string;
  /** Space-separated ids of the outputs and transaction entries the block added. */
  added: string;
  /** JSON of the output documents the block spent, to put back on undo. */
  spent: string;
  undo?: boolean;
}
interface BlockUndo {
  h: number;
  hash: string;
  prev: string;
  added: string[];
  spent: UtxoDoc[];
}
const pack = (u: BlockUndo): JournalDoc => ({ _id: journalId(u.h), h: u.h, hash: u.hash, prev: u.prev, added: u.added.join(' '), spent: JSON.stringify(u.spent) });
const unpack = (j: JournalDoc): BlockUndo => ({ h: j.h, hash: j.hash, prev: j.prev, added: j.added ? j.added.split(' ') : [], spent: JSON.parse(j.spent) });
type JournalHead = Pick<JournalDoc, 'h' | 'hash' | 'prev' | 'undo'>;

const utxoId = (txid: string, n: number) => `u:${txid}:${n}`;
const txId = (address: string, txid: string) => `t:${address}:${txid}`;
const journalId = (h: number) => `j:${h}`;
/** The ids that start with `prefix` (nedb answers a range on the id index without a scan). */
const prefixed = (prefix: string) => ({ _id: { $gte: prefix, $lt: prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1) } });
const ids = (docs: { _id: string }[]) => ({ _id: { $in: docs.map((d) => d._id) } });

export interface NedbStoreOptions {
  /** Blocks whose undo records are kept: the deepest reorg or rescan that is undone exactly. */
  undoDepth: number;
  /** Recently created outputs kept in memory, so most spends need no lookup (default 50,000). */
  hotOutputs?: number;
  /** Test hook: called after each write step; throwing there simulates a crash at that point. */
  faultAt?: (step: 'journal' | 'spent' | 'added' | 'tip' | 'undo-marked' | 'reverted') => void;
}

export class NedbExplorerStore implements ExplorerStore {
  private current: Tip | null = null;
  /** height -> [hash, prev] of the blocks whose journal records are kept. */
  private readonly recent = new Map<number, [string, string]>();
  private readonly lock = new RwLock();
  /** Unspent outputs created lately (a mirror of part of the store, oldest first); cleared on any doubt. */
  private readonly hot = new Map<string, UtxoDoc>();

  constructor(
    private readonly ds: Collection,
    private readonly opts: NedbStoreOptions,
  ) {}

  async open(): Promise<Tip | null> {
    return this.lock.write(async () => {
      this.hot.clear();
      await this.ds.load();
      await this.ds.ensureIndex({ fieldName: 'a', sparse: true });
      const tipDoc = (await this.ds.findOne({ _id: 'tip' })) as { h: number; hash: string } | null;
      this.current = tipDoc ? { height: tipDoc.h, hash: tipDoc.hash } : null;
      const heads = ((await this.ds.find(prefixed('j:'), { h: 1, hash: 1, prev: 1, undo: 1 })) as JournalHead[]).sort((x, y) => x.h - y.h);
      const t = this.current?.height ?? -Infinity;
      const atTip = heads.find((x) => x.h === t);
      if (atTip?.undo) {
        // Crashed while undoing the tip block: finish the undo.
        await this.revert(await this.journal(t));
        await this.setTip(atTip.h - 1, atTip.prev);
      }
      // Records above the tip: a run cut short before its commit (reverted; fetched again), or an undo
      // that had committed before its record was deleted.
      const above = heads.filter((x) => x.h > (this.current?.height ?? -Infinity)).reverse();
      for (const x of above) if (!x.undo) await this.revert(await this.journal(x.h));
      if (above.length) await this.ds.remove({ _id: { $in: above.map((x) => journalId(x.h)) } }, { multi: true });
      heads.splice(heads.length - above.length);
      if (this.current && heads.length && heads.at(-1)!.h !== this.current.height)
        throw new IndexInconsistentError(`explorer index: no journal record for the scanned tip ${this.current.height}`);
      this.recent.clear();
      for (const hd of heads) this.recent.set(hd.h, [hd.hash, hd.prev]);
      return this.current;
    });
  }

  tip(): Tip | null {
    return this.current;
  }

  hashAt(height: number): string | null {
    if (this.current && height === this.current.height) return this.current.hash;
    const r = this.recent.get(height);
    if (r) return r[0];
    return this.recent.get(height + 1)?.[1] ?? null;
  }

  lowestUndoTarget(): number | null {
    if (!this.current) return null;
    let low = this.current.height;
    while (this.recent.has(low)) low--;
    return low;
  }

  applyBlocks(blocks: ParsedBlock[]): Promise<void> {
    if (!blocks.length) return Promise.resolve();
    return this.lock.write(async () => {
      let prev = this.current;
      for (const b of blocks) {
        if (prev && (b.height !== prev.height + 1 || b.prev !== prev.hash))
          throw new Error(`block ${b.height} (${b.hash}) does not extend ${prev.height} (${prev.hash})`);
        prev = { height: b.height, hash: b.hash };
      }
      const fault = this.opts.faultAt ?? (() => {});

      // Outputs created in this run and not yet spent; spends of anything else are looked up in one query.
      const created = new Map<string, UtxoDoc>();
      const journals: BlockUndo[] = [];
      const txMaps: Map<string, TxDoc>[] = [];
      const outside: { id: string; txid: string; block: number }[] = [];
      blocks.forEach((b, i) => {
        const txs = new Map<string, TxDoc>();
        const entry = (a: string, txid: string) => {
          const id = txId(a, txid);
          if (!txs.has(id)) txs.set(id, { _id: id, h: b.height });
        };
        const adds = new Set<string>();
        const spent: UtxoDoc[] = [];
        for (const o of b.outputs) {
          const id = utxoId(o.txid, o.vout);
          created.set(id, { _id: id, a: o.address, h: b.height, v: o.satoshis, s: o.scriptPubKey, cb: o.coinbase });
          adds.add(id);
          entry(o.address, o.txid);
        }
        for (const s of b.spends) {
          const id = utxoId(s.prevTxid, s.prevVout);
          const own = created.get(id);
          if (!own) {
            outside.push({ id, txid: s.txid, block: i });
            continue;
          }
          created.delete(id);
          // Created and spent in the same block: never unspent there, but both transactions touch the address.
          if (!adds.delete(id)) spent.push(own);
          entry(own.a, s.txid);
        }
        journals.push({ h: b.height, hash: b.hash, prev: b.prev, added: [...adds], spent });
        txMaps.push(txs);
      });
      const before: UtxoDoc[] = [];
      if (outside.length) {
        const missing = outside.filter((x) => !this.hot.has(x.id)).map((x) => x.id);
        const found = missing.length ? ((await this.ds.find({ _id: { $in: missing } })) as UtxoDoc[]) : [];
        const byId = new Map(found.map((d) => [d._id, d]));
        for (const x of outside) {
          const d = this.hot.get(x.id);
          if (d) byId.set(x.id, d);
        }
        before.push(...byId.values());
        // Outputs the index never held (before the start height, or paying no address) are not tracked.
        for (const x of outside) {
          const d = byId.get(x.id);
          if (!d) continue;
          journals[x.block].spent.push(d);
          const tid = txId(d.a, x.txid);
          if (!txMaps[x.block].has(tid)) txMaps[x.block].set(tid, { _id: tid, h: journals[x.block].h });
        }
      }
      journals.forEach((j, i) => j.added.push(...txMaps[i].keys()));

      // Until the tip moves, the hot outputs may not match the store; a failure below leaves them cleared.
      const hot = this.hot;
      for (const d of before) hot.delete(d._id);
      await this.ds.insert(journals.map(pack));
      fault('journal');
      if (before.length) await this.ds.remove(ids(before), { multi: true });
      fault('spent');
      const fresh: (UtxoDoc | TxDoc)[] = [...created.values()];
      for (const m of txMaps) for (const d of m.values()) fresh.push(d);
      if (fresh.length) await this.ds.insert(fresh);
      fault('added');
      const last = journals.at(-1)!;
      await this.setTip(last.h, last.hash);
      fault('tip');
      const room = this.opts.hotOutputs ?? 50_000;
      for (const d of created.values()) hot.set(d._id, d);
      for (const id of hot.keys()) {
        if (hot.size <= room) break;
        hot.delete(id);
      }
      for (const j of journals) this.recent.set(j.h, [j.hash, j.prev]);
      const old: string[] = [];
      for (const h of this.recent.keys()) if (h <= last.h - this.opts.undoDepth) old.push(journalId(h));
      if (old.length) {
        await this.ds.remove({ _id: { $in: old } }, { multi: true });
        for (const id of old) this.recent.delete(Number(id.slice(2)));
      }
    });
  }

  undoTip(): Promise<void> {
    return this.lock.write(async () => {
      const tip = this.current;
      if (!tip) throw new Error('nothing to undo');
      if (!this.recent.has(tip.height)) throw new Error(`block ${tip.height} is below the kept undo depth and cannot be undone exactly`);
      this.hot.clear();
      const j = await this.journal(tip.height);
      const fault = this.opts.faultAt ?? (() => {});
      await this.ds.update({ _id: journalId(j.h) }, { $set: { undo: true } }, {});
      fault('undo-marked');
      await this.revert(j);
      fault('reverted');
      await this.setTip(j.h - 1, j.prev);
      await this.ds.remove({ _id: journalId(j.h) }, {});
      this.recent.delete(j.h);
    });
  }

  drop(): Promise<void> {
    return this.lock.write(async () => {
      this.hot.clear();
      await this.ds.remove({}, { multi: true });
      this.current = null;
      this.recent.clear();
      // Rewrite the file without the deleted documents (nedb-promises forwards this to nedb).
      await (this.ds as any).compactDatafileAsync?.();
    });
  }

  utxos(address: string): Promise<Utxo[]> {
    return this.lock.read(async () => {
      const docs = (await this.ds.find({ a: address })) as UtxoDoc[];
      const out = docs.map((d) => {
        const [, txid, n] = d._id.split(':');
        return { address: d.a, txid, vout: Number(n), height: d.h, satoshis: d.v, scriptPubKey: d.s, coinbase: d.cb };
      });
      return out.sort((x, y) => x.height - y.height || (x.txid < y.txid ? -1 : x.txid > y.txid ? 1 : x.vout - y.vout));
    });
  }

  transactions(address: string): Promise<TxRef[]> {
    return this.lock.read(async () => {
      const docs = (await this.ds.find(prefixed(`t:${address}:`))) as TxDoc[];
      const out = docs.map((d) => ({ txid: d._id.slice(d._id.lastIndexOf(':') + 1), height: d.h }));
      return out.sort((x, y) => y.height - x.height || (x.txid < y.txid ? -1 : x.txid > y.txid ? 1 : 0));
    });
  }

  balance(address: string): Promise<bigint> {
    return this.lock.read(async () => {
      const docs = (await this.ds.find({ a: address }, { v: 1 })) as { v: number }[];
      let sum = 0n;
      for (const d of docs) sum += BigInt(d.v);
      return sum;
    });
  }

  private async journal(h: number): Promise<BlockUndo> {
    const j = (await this.ds.findOne({ _id: journalId(h) })) as JournalDoc | null;
    if (!j) throw new IndexInconsistentError(`explorer index: journal record of block ${h} is missing`);
    return unpack(j);
  }

  /** Take a block's effects back: remove what it added, put back what it spent. Idempotent. */
  private async revert(j: BlockUndo): Promise<void> {
    if (j.added.length) await this.ds.remove({ _id: { $in: j.added } }, { multi: true });
    if (j.spent.length) {
      await this.ds.remove(ids(j.spent), { multi: true });
      await this.ds.insert(j.spent);
    }
  }

  private async setTip(h: number, hash: string): Promise<void> {
    await this.ds.update({ _id: 'tip' }, { _id: 'tip', h, hash }, { upsert: true });
    this.current = { height: h, hash };
  }
}

/** Many readers or one writer; a waiting writer holds off new readers. */
class RwLock {
  private writer: Promise<void> | null = null;
  private readers = 0;
  private drained: (() => void) | null = null;

  async read<T>(fn: () => Promise<T>): Promise<T> {
    while (this.writer) await this.writer;
    this.readers++;
    try {
      return await fn();
    } finally {
      if (--this.readers === 0 && this.drained) this.drained();
    }
  }

  async write<T>(fn: () => Promise<T>): Promise<T> {
    while (this.writer) await this.writer;
    let release!: () => void;
    this.writer = new Promise<void>((r) => (release = r));
    try {
      while (this.readers > 0) await new Promise<void>((r) => (this.drained = r));
      this.drained = null;
      return await fn();
    } finally {
      this.writer = null;
      release();
    }
  }
}
