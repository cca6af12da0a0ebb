/**
 * What both stores keep in memory about the index: the scanned tip and the hash (and previous hash) of every
 * block whose undo record is kept. The fork search (`hashAt`), the depth a rollback can reach exactly
 * (`lowestUndoTarget`) and the bookkeeping after a run or an undo are the same whatever holds the rows, so
 * they live here once (the SQLite and PostgreSQL stores each had a copy).
 */
import { IndexInconsistentError, type Tip } from './store.ts';

export interface Head {
  height: number;
  hash: string;
  prev: string;
}

export class KeptBlocks {
  private current: Tip | null = null;
  /** height -> [hash, prev], in height order (insertion order). */
  private readonly recent = new Map<number, [string, string]>();

  constructor(private readonly undoDepth: number) {}

  /** Take what `open` read: the stored tip and the journal's heads, oldest first. Throws when they disagree. */
  load(tip: Tip | null, heads: Head[]): Tip | null {
    this.current = tip;
    this.recent.clear();
    for (const r of heads) this.recent.set(r.height, [r.hash, r.prev]);
    const top = heads.at(-1)?.height;
    if (tip && top !== undefined && top !== tip.height)
      throw new IndexInconsistentError(`explorer index: the newest journal record (${top}) is not the scanned tip ${tip.height}`);
    return tip;
  }

  clear(): void {
    this.current = null;
    this.recent.clear();
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

  /** Journal records at or below this height are pruned by the run that moves the tip to `tipHeight`. */
  pruneBelow(tipHeight: number): number {
    return tipHeight - this.undoDepth;
  }

  /** The tip to undo; throws when there is none or its undo record is no longer kept. */
  undoable(): Tip {
    const tip = this.current;
    if (!tip) throw new Error('nothing to undo');
    if (!this.recent.has(tip.height)) throw new Error(`block ${tip.height} is below the kept undo depth and cannot be undone exactly`);
    return tip;
  }

  /** A run was committed: its blocks are kept, the tip is its last, records beyond the undo depth are gone. */
  applied(undo: Head[]): void {
    const last = undo.at(-1);
    if (!last) return;
    this.current = { height: last.height, hash: last.hash };
    for (const u of undo) this.recent.set(u.height, [u.hash, u.prev]);
    const floor = this.pruneBelow(last.height);
    for (const h of this.recent.keys()) {
      if (h > floor) break; // insertion order is height order
      this.recent.delete(h);
    }
  }

  /** The tip block was undone and committed. */
  undone(j: Head): void {
    this.current = { height: j.height - 1, hash: j.prev };
    this.recent.delete(j.height);
  }
}
