/**
 * Group commit for store writes. The store appends every write to its file one at a time, so a write per
 * login would cap logins at one disk append each. Writes that arrive while one is in flight go out
 * together in the next (one append for the lot); each caller still waits until its own write is on disk.
 */
export class GroupCommit<T> {
  private pending: { item: T; done: (err?: unknown) => void }[] = [];
  private running = false;
  private added = 0;
  private flushed = 0;
  private waiters: { seq: number; resolve: () => void }[] = [];

  constructor(
    private readonly write: (items: T[]) => Promise<unknown>,
    private readonly maxBatch = 1000,
  ) {}

  add(item: T): Promise<void> {
    this.added++;
    return new Promise<void>((resolve, reject) => {
      this.pending.push({ item, done: (err) => (err ? reject(err) : resolve()) });
      if (!this.running) {
        // Start on the next turn: the other requests read in this one join the same write.
        this.running = true;
        setImmediate(() => void this.drain());
      }
    });
  }

  /** Resolves once every write added before this call is finished (written or failed). */
  settled(): Promise<void> {
    if (this.flushed >= this.added) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ seq: this.added, resolve }));
  }

  private async drain(): Promise<void> {
    this.running = true;
    while (this.pending.length) {
      const batch = this.pending.splice(0, this.maxBatch);
      let err: unknown;
      try {
        await this.write(batch.map((b) => b.item));
      } catch (e) {
        err = e ?? new Error('store write failed');
      }
      for (const b of batch) b.done(err);
      this.flushed += batch.length;
      this.waiters = this.waiters.filter((w) => (w.seq <= this.flushed ? (w.resolve(), false) : true));
    }
    this.running = false;
  }
}
