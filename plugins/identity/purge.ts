/**
 * Store removals in small batches that yield to the event loop between them. One nedb `remove` of 60,000
 * documents ran in a single turn of the loop and held every request for 0.9 to 2.7 s (issue 11); a batch
 * of 500 documents is a few milliseconds, and requests are served between batches.
 */
import type { Datastore } from '../../core/plugin-api.ts';

export const PURGE_BATCH = 500;

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Remove every document whose `field` is among `values`, in batches; returns how many were removed. */
export async function removeIn(store: Datastore, field: string, values: readonly string[], batch = PURGE_BATCH): Promise<number> {
  let n = 0;
  for (let i = 0; i < values.length; i += batch) {
    if (i > 0) await yieldTurn();
    n += await store.remove({ [field]: { $in: values.slice(i, i + batch) } }, { multi: true });
  }
  return n;
}

/** Remove every document matching `query`, a batch at a time (found through the store's indexes). */
export async function removeWhere(store: Datastore, query: Record<string, unknown>, batch = PURGE_BATCH): Promise<number> {
  let n = 0;
  for (;;) {
    const docs = (await store.find(query, { _id: 1 }).limit(batch)) as { _id: string }[];
    if (docs.length === 0) return n;
    n += await store.remove({ _id: { $in: docs.map((d) => d._id) } }, { multi: true });
    if (docs.length < batch) return n;
    await yieldTurn();
  }
}

/**
 * nedb appends every insert and removal to its file and rewrites the file only when asked. Rewrite it once
 * the lines written since the last rewrite outnumber the live documents (and are more than a few
 * thousand), so the file stays within about twice its live size.
 */
export class Compactor {
  private written = 0;

  constructor(
    private readonly store: Datastore,
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
