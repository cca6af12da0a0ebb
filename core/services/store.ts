/** Embedded storage: one nedb-promises datastore per collection, files under the data dir. */
import fs from 'node:fs';
import path from 'node:path';
import NeDB from 'nedb-promises';

export type Datastore<T = any> = NeDB<T>;

export class Stores {
  private readonly open = new Map<string, Datastore>();

  /** `dir` null keeps every collection in memory (tests that need no files). */
  constructor(private readonly dir: string | null) {}

  get(owner: string, collection: string): Datastore {
    if (!/^[a-z0-9][a-z0-9_-]*$/i.test(collection)) throw new Error(`invalid collection name '${collection}'`);
    const key = `${owner}/${collection}`;
    let ds = this.open.get(key);
    if (!ds) {
      if (this.dir) fs.mkdirSync(path.join(this.dir, owner), { recursive: true });
      ds = NeDB.create(this.dir ? { filename: path.join(this.dir, owner, `${collection}.db`), autoload: true } : { inMemoryOnly: true });
      this.open.set(key, ds);
    }
    return ds;
  }

  /** Compact every file so a restart loads quickly (nedb appends on every write); bounded at 2 s. */
  async close(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    if (!this.dir) return;
    // nedb-promises does not expose the async compaction; the wrapped @seald-io/nedb store does.
    const compact = all.map((ds) => (ds as any).__original?.compactDatafileAsync?.().catch(() => undefined));
    await Promise.race([Promise.all(compact), new Promise((r) => setTimeout(r, 2000).unref())]);
  }
}
