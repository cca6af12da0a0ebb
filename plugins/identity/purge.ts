/**
 * Store removals in small batches that yield to the event loop between them. One nedb `remove` of 60,000
 * documents ran in a single turn of the loop and held every request for 0.9 to 2.7 s (issue 11). A batch of
 * 100 documents named by a uniquely indexed field takes about 0.8 ms (median here, 30,000 documents
 * stored), and requests are served between batches. The documents to remove are picked from memory: an
 * nedb range query (`expireAt <= now`) walks every document in the range whatever its limit, 16 ms per
 * batch with 30,000 stored.
 */
import type { Collection } from '../../core/plugin-api.ts';

export const PURGE_BATCH = 100;

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Remove every document whose `field` is among `values`, in batches; returns how many were removed. */
export async function removeIn(store: Collection, field: string, values: readonly string[], batch = PURGE_BATCH): Promise<number> {
  let n = 0;
  for (let i = 0; i < values.length; i += batch) {
    if (i > 0) await yieldTurn();
    n += await store.remove({ [field]: { $in: values.slice(i, i + batch) } }, { multi: true });
  }
  return n;
}

/**
 * nedb appends every insert and removal to its file and rewrites the file only when asked. Rewrite it once
 * the lines written since the last rewrite outnumber the live documents (and are more than a few
 * thousand), so the file stays within about twice its live size.
 */
export class Compactor {
  private written = 0;

  constructor(
    private readonly store: Collection,
    private readonly live: () => number,
    private readonly minLines = 5000,
  ) {}

  /** Count lines appended to the file (one per inserted or removed document). */
  wrote(lines: number): void {
    this.written += lines;
  }

  async maybeCompact(): Promise<boolean> {
    if (this.written < this.minLines || this.written < this.live()) return false;
    this.written = 0;
    const original = (this.store as any).__original;
    if (typeof original?.compactDatafileAsync !== 'function') return false;
    await original.compactDatafileAsync();
    return true;
  }
}
