/**
 * A store's writer thread as the store sees it (both stores have one): runs and undos go to a
 * node:worker_threads thread that plans and writes them (`writer-loop.ts` on its side), so that work runs
 * beside the node's thread, which meanwhile takes the daemon's answers for the next blocks. Requests go in
 * order and are answered by id; the heads of each committed transaction are reported before the answers of
 * the requests it completed; a death of the thread fails every pending request.
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { runnableModule } from '../../core/plugin-api.ts';
import type { Head } from './kept-blocks.ts';
import { IndexInconsistentError, type Fault, type ParsedBlock, type Tip } from './store.ts';

/** What every writer thread is given at start, besides its store's own settings. */
export interface WriterBase {
  undoDepth: number;
  /** Outputs and spends one transaction takes at most (runs queued behind a transaction go in together up to it). */
  rowsPerTransaction: number;
  fault?: Fault;
}

/** `base`: the tip the store expects the request to find (a store shared between nodes checks it). */
export type ToWriter =
  | { id: number; op: 'apply'; blocks: ParsedBlock[]; chainHeight?: number; base: Tip | null }
  | { id: number; op: 'undo'; height: number; base: Tip | null }
  | { id: number; op: 'close' };
export type FromWriter =
  | { op: 'committed'; heads: Head[]; floor: number }
  | { op: 'done'; id: number; head?: Head }
  | { op: 'failed'; id: number; message: string; name: string };

export interface WriterEntry {
  url: URL;
  execArgv: string[];
}

/**
 * How a writer thread is started from `module` (a URL next to the store's module, `.js` in dist/ or `.ts`).
 * The compiled module (from dist/, or from the sources when dist/ is current: runnableModule), with the
 * module loaders this process was started with and nothing else of its execArgv (`--eval` and V8 flags do
 * not apply to a thread). The TypeScript module otherwise (sources under tsx with no current build): tsx
 * registers its hooks in the main thread only on Node 20, so a small bootstrap registers them in the thread
 * first, then imports the module.
 */
export async function writerEntry(module: URL, fromSources = false): Promise<WriterEntry> {
  const { url, compiled } = await runnableModule(module, fromSources ? async () => false : undefined);
  if (compiled) {
    // tsx is for TypeScript: a compiled module started from the sources needs none of its hooks.
    const loader = (spec: string) => !/(^|[/=])tsx([/]|$)/.test(spec);
    const argv = process.execArgv;
    const execArgv: string[] = [];
    for (let i = 0; i < argv.length; i++) {
      const a = argv[i];
      if (/^(--require|-r|--import|--loader|--experimental-loader)$/.test(a) && i + 1 < argv.length) {
        if (loader(argv[i + 1])) execArgv.push(a, argv[i + 1]);
        i++;
      } else if (/^(--require|--import|--loader|--experimental-loader)=/.test(a) && loader(a)) execArgv.push(a);
    }
    return { url, execArgv };
  }
  // tsx's ESM API (its package exports `./esm/api` as index.mjs for import, index.cjs for require).
  const api = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/\.cjs$/, '.mjs')).href;
  const code = `import { register } from ${JSON.stringify(api)}; register(); await import(${JSON.stringify(module.href)});`;
  return { url: new URL(`data:text/javascript,${encodeURIComponent(code)}`), execArgv: [] };
}

type Pending = { resolve: (v: Head | undefined) => void; reject: (e: Error) => void };
type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;
/** What the store asks of its thread (the id is added here). */
type Request = WithoutId<Exclude<ToWriter, { op: 'close' }>>;

export class WriterThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private dead: string | null = null;
  readonly exited: Promise<void>;

  constructor({ url, execArgv }: WriterEntry, data: WriterBase, onCommitted: (heads: Head[], floor: number) => void, onDeath: () => void) {
    // The node runs with 2 MB semi-spaces (--max-semi-space-size=2, for its idle RSS), which its threads
    // inherit: a run of ~700 blocks, alive while it is planned and written, was then promoted and marked
    // over and over. The writer gets 8 MB semi-spaces of its own (young generation 24 MB): bench:explorer
    // under the node's flag, SQLite index / fetch 0.72-0.76 without, 0.77-0.84 with (runs alternating).
    this.worker = new Worker(url, { workerData: data, execArgv, resourceLimits: { maxYoungGenerationSizeMb: 24 } });
    this.worker.unref(); // kept alive by pending requests only (ref below)
    this.worker.on('message', (m: FromWriter) => {
      if (this.dead) return; // the store has read what the index holds since
      if (m.op === 'committed') return onCommitted(m.heads, m.floor);
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (!this.pending.size) this.worker.unref();
      if (m.op === 'done') p.resolve(m.head);
      else p.reject(m.name === 'IndexInconsistentError' ? new IndexInconsistentError(m.message) : new Error(m.message));
    });
    const died = (why: string) => {
      if (this.dead) return;
      this.dead = why;
      onDeath();
      const e = new Error(`explorer index writer thread ${why}; the index holds the runs committed before`);
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    };
    this.worker.on('error', (e) => died(`failed: ${e.message}`));
    this.worker.on('messageerror', (e) => died(`sent an unreadable message: ${e.message}`));
    this.exited = new Promise((resolve) => this.worker.once('exit', (code) => (died(`exited (code ${code})`), resolve())));
  }

  get alive(): boolean {
    return this.dead === null;
  }

  request(m: Request): Promise<Head | undefined> {
    if (this.dead) return Promise.reject(new Error(`explorer index writer thread ${this.dead}`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage({ ...m, id } as ToWriter);
    });
  }

  /** Finish what was asked, close the write connection, end the thread. */
  async close(): Promise<void> {
    if (this.dead) return;
    this.worker.ref();
    this.worker.postMessage({ id: 0, op: 'close' } satisfies ToWriter);
    await this.exited;
  }
}
