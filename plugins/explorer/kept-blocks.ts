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

/**
 * The highest height a run ending at `tipHeight` keeps no journal record for: its own blocks at or below it
 * get none, and the records there are pruned. Normally `undoDepth` below the new tip. While catching up,
 * `chainHeight` (the daemon's height when the blocks were fetched) raises it: a block the chain is already
 * `undoDepth` blocks past would have its record pruned by the time the index reaches the chain's tip, so it
 * is never written. The records kept are those above it, up to the tip: the journal stays one unbroken
 * stretch ending at the tip. A reorganisation reaching more than `undoDepth` below the chain's tip then
 * means a rebuild, as one reaching more than `undoDepth` below the index's tip always did.
 */
export function journalFloor(undoDepth: number, tipHeight: number, chainHeight = tipHeight): number {
  return Math.min(Math.max(chainHeight, tipHeight) - undoDepth, tipHeight);
}

export class KeptBlocks {
  private current: Tip | null = null;
  /** height -> [hash, prev], in height order (insertion order). */
  private readonly recent = new Map<number, [string, string]>();

  constructor(private readonly undoDepth: number) {}

  /** journalFloor at this index's undo depth. */
  floor(tipHeight: number, chainHeight?: number): number {
    return journalFloor(this.undoDepth, tipHeight, chainHeight);
  }

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

  /** The tip to undo; throws when there is none or its undo record is no longer kept. */
  undoable(): Tip {
    const tip = this.current;
    if (!tip) throw new Error('nothing to undo');
    if (!this.recent.has(tip.height)) throw new Error(`block ${tip.height} is below the kept undo depth and cannot be undone exactly`);
    return tip;
  }

  /**
   * A run was committed: the tip is its last block, its blocks above `floor` (journalFloor) are kept, the
   * records at or below it are gone.
   */
  applied(heads: Head[], floor: number): void {
    const last = heads.at(-1);
    if (!last) return;
    this.current = { height: last.height, hash: last.hash };
    for (const u of heads) if (u.height > floor) this.recent.set(u.height, [u.hash, u.prev]);
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
