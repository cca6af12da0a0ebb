/** Embedded storage: one nedb-promises datastore per collection, files under the data dir. */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import NeDB from 'nedb-promises';
import type { Logger } from 'pino';

/**
 * nedb loads a file through `byline(fs.createReadStream(file))`, which pipes without passing errors on: a
 * read stream that cannot open its file (EMFILE when descriptors run out, measured: the node died 62 s
 * after start under 1,100 idle connections) threw an unhandled 'error' and ended the process. The stream's
 * errors now destroy the line stream it is piped to, so the load rejects like any other store error.
 */
const storage = createRequire(createRequire(import.meta.url).resolve('nedb-promises'))('@seald-io/nedb/lib/storage.js') as {
  readFileStream: (file: string, opts: object) => fs.ReadStream;
};
storage.readFileStream = (file, opts) => {
  const rs = fs.createReadStream(file, opts);
  const pipe = rs.pipe.bind(rs);
  rs.pipe = ((dest: NodeJS.WritableStream & { destroy?: (e: Error) => void }, o?: { end?: boolean }) => {
    rs.on('error', (e) => dest.destroy?.(e));
    return pipe(dest, o);
  }) as typeof rs.pipe;
  rs.on('error', () => undefined); // reported through the line stream above
  return rs;
};

export type Datastore<T = any> = NeDB<T>;

export class Stores {
  private readonly open = new Map<string, Datastore>();

  /** `dir` null keeps every collection in memory (tests that need no files). */
  constructor(
    private readonly dir: string | null,
    private readonly log?: Logger,
  ) {}

  get(owner: string, collection: string): Datastore {
    if (!/^[a-z0-9][a-z0-9_-]*$/i.test(collection)) throw new Error(`invalid collection name '${collection}'`);
    const key = `${owner}/${collection}`;
    let ds = this.open.get(key);
    if (!ds) {
      if (this.dir) fs.mkdirSync(path.join(this.dir, owner), { recursive: true });
      // No `autoload`: nedb-promises loads on first use anyway (autoload loaded every file twice), and a
      // load that failed (EMFILE) is retried by the next operation instead of failing the store for good.
      ds = NeDB.create(this.dir ? { filename: path.join(this.dir, owner, `${collection}.db`) } : { inMemoryOnly: true });
      const store = ds;
      ds.on('loadError', (_ds: unknown, err: Error) => {
        // nedb-promises keeps its first load promise for good; its proxy refuses plain assignment.
        Object.defineProperty(store, '__loaded', { value: null });
        this.log?.warn({ err: err.message, collection: key }, 'store not loaded; the next operation retries');
      });
      ds.load().catch(() => undefined);
      // `compact` of the plugin API: nedb-promises runs `load` once for good, so it never rewrites the file again; a plugin
      // that removed a secret needs the old lines gone from the disk now, not at the next stop.
      Object.defineProperty(store, 'compact', { value: async () => {
        await store.load();
        await (store as any).__original?.compactDatafileAsync?.();
      } });
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
