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
import type { Datastore } from '../../core/plugin-api.ts';
import { IndexInconsistentError, type ExplorerStore, type ParsedBlock, type Tip, type TxRef, type Utxo } from './store.ts';

interface UtxoDoc {
  _id: string;
  k: 'u';
  a: string;
  txid: string;
  n: number;
  h: number;
  v: number;
  s: string;
  cb: boolean;
}
interface TxDoc {
  _id: string;
  k: 't';
  a: string;
  txid: string;
  h: number;
}
interface JournalDoc {
  _id: string;
  k: 'j';
  h: number;
  hash: string;
  prev: string;
  /** Ids of the outputs and transaction entries the block added (ids only: cheaper to write). */
  added: string[];
  /** The outputs the block spent, whole, to put back on undo. */
  spent: UtxoDoc[];
  undo?: boolean;
}
type JournalHead = Pick<JournalDoc, 'h' | 'hash' | 'prev' | 'undo'>;

const utxoId = (txid: string, n: number) => `u:${txid}:${n}`;
const txId = (address: string, txid: string) => `t:${address}:${txid}`;
const journalId = (h: number) => `j:${h}`;
const ids = (docs: { _id: string }[]) => ({ _id: { $in: docs.map((d) => d._id) } });

export interface NedbStoreOptions {
  /** Blocks whose undo records are kept: the deepest reorg or rescan that is undone exactly. */
  undoDepth: number;
  /** Test hook: called after each write step; throwing there simulates a crash at that point. */
  faultAt?: (step: 'journal' | 'spent' | 'added' | 'tip' | 'undo-marked' | 'reverted') => void;
}

export class NedbExplorerStore implements ExplorerStore {
  private current: Tip | null = null;
  /** height -> [hash, prev] of the blocks whose journal records are kept. */
  private readonly recent = new Map<number, [string, string]>();
  private readonly lock = new RwLock();

  constructor(
    private readonly ds: Datastore,
    private readonly opts: NedbStoreOptions,
  ) {}

  async open(): Promise<Tip | null> {
    return this.lock.write(async () => {
      await this.ds.load();
      await this.ds.ensureIndex({ fieldName: 'a', sparse: true });
      const tipDoc = (await this.ds.findOne({ _id: 'tip' })) as { h: number; hash: string } | null;
      this.current = tipDoc ? { height: tipDoc.h, hash: tipDoc.hash } : null;
      const heads = ((await this.ds.find({ k: 'j' }, { h: 1, hash: 1, prev: 1, undo: 1 })) as JournalHead[]).sort((x, y) => x.h - y.h);
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
      const journals: JournalDoc[] = [];
      const txMaps: Map<string, TxDoc>[] = [];
      const outside: { id: string; txid: string; block: number }[] = [];
      blocks.forEach((b, i) => {
        const txs = new Map<string, TxDoc>();
        const entry = (a: string, txid: string) => {
          const id = txId(a, txid);
          if (!txs.has(id)) txs.set(id, { _id: id, k: 't', a, txid, h: b.height });
        };
        const adds = new Set<string>();
        const spent: UtxoDoc[] = [];
        for (const o of b.outputs) {
          const id = utxoId(o.txid, o.vout);
          created.set(id, { _id: id, k: 'u', a: o.address, txid: o.txid, n: o.vout, h: b.height, v: o.satoshis, s: o.scriptPubKey, cb: o.coinbase });
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
        journals.push({ _id: journalId(b.height), k: 'j', h: b.height, hash: b.hash, prev: b.prev, added: [...adds], spent });
        txMaps.push(txs);
      });
      let before: UtxoDoc[] = [];
      if (outside.length) {
        before = (await this.ds.find({ _id: { $in: outside.map((x) => x.id) } })) as UtxoDoc[];
        const byId = new Map(before.map((d) => [d._id, d]));
        // Outputs the index never held (before the start height, or paying no address) are not tracked.
        for (const x of outside) {
          const d = byId.get(x.id);
          if (!d) continue;
          journals[x.block].spent.push(d);
          const tid = txId(d.a, x.txid);
          if (!txMaps[x.block].has(tid)) txMaps[x.block].set(tid, { _id: tid, k: 't', a: d.a, txid: x.txid, h: journals[x.block].h });
        }
      }
      journals.forEach((j, i) => j.added.push(...txMaps[i].keys()));

      await this.ds.insert(journals);
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
      const j = await this.journal(tip.height);
      const fault = this.opts.faultAt ?? (() => {});
      await this.ds.update({ _id: j._id }, { $set: { undo: true } }, {});
      fault('undo-marked');
      await this.revert(j);
      fault('reverted');
      await this.setTip(j.h - 1, j.prev);
      await this.ds.remove({ _id: j._id }, {});
      this.recent.delete(j.h);
    });
  }

  drop(): Promise<void> {
    return this.lock.write(async () => {
      await this.ds.remove({}, { multi: true });
      this.current = null;
      this.recent.clear();
      // Rewrite the file without the deleted documents (nedb-promises forwards this to nedb).
      await (this.ds as any).compactDatafileAsync?.();
    });
  }

  utxos(address: string): Promise<Utxo[]> {
    return this.lock.read(async () => {
      const docs = (await this.ds.find({ a: address, k: 'u' })) as UtxoDoc[];
      docs.sort((x, y) => x.h - y.h || (x.txid < y.txid ? -1 : x.txid > y.txid ? 1 : x.n - y.n));
      return docs.map((d) => ({ address: d.a, txid: d.txid, vout: d.n, height: d.h, satoshis: d.v, scriptPubKey: d.s, coinbase: d.cb }));
    });
  }

  transactions(address: string): Promise<TxRef[]> {
    return this.lock.read(async () => {
      const docs = (await this.ds.find({ a: address, k: 't' })) as TxDoc[];
      docs.sort((x, y) => y.h - x.h || (x.txid < y.txid ? -1 : x.txid > y.txid ? 1 : 0));
      return docs.map((d) => ({ txid: d.txid, height: d.h }));
    });
  }

  balance(address: string): Promise<bigint> {
    return this.lock.read(async () => {
      const docs = (await this.ds.find({ a: address, k: 'u' }, { v: 1 })) as { v: number }[];
      let sum = 0n;
      for (const d of docs) sum += BigInt(d.v);
      return sum;
    });
  }

  private async journal(h: number): Promise<JournalDoc> {
    const j = (await this.ds.findOne({ _id: journalId(h) })) as JournalDoc | null;
    if (!j) throw new IndexInconsistentError(`explorer index: journal record of block ${h} is missing`);
    return j;
  }

  /** Take a block's effects back: remove what it added, put back what it spent. Idempotent. */
  private async revert(j: JournalDoc): Promise<void> {
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
