/**
 * The explorer index in PostgreSQL (config `explorer.store: { kind: postgres, url }`), for operators who
 * share one index between nodes or outgrow one disk. Same tables and keys as the embedded store (prefixed
 * `explorer_`, addresses in the "C" collation so key order is byte order whatever the database's locale;
 * `pg-schema.ts`).
 *
 * Reads, open and drop go through a pool on the node's thread. Runs and undos go to a writer thread
 * (`pg-writer-thread.ts`, started at the first write, with a connection of its own: `pg-writer.ts`), as
 * in the SQLite store: the node's thread hands a run over and goes on taking the daemon's answers. Every
 * write takes the writers' advisory lock and checks the stored tip, so several nodes may share one index.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { KeptBlocks } from './kept-blocks.ts';
import { hex } from './plan.ts';
import { loadPg, SCHEMA, SCHEMA_SQL, toUtxo, WRITER_LOCK, writeTransaction, type Row } from './pg-schema.ts';
import type { PgWriterData } from './pg-writer-thread.ts';
import { IndexInconsistentError, type ExplorerStore, type Fault, type Page, type ParsedBlock, type Tip, type TxCursor, type TxRef, type Utxo, type UtxoCursor } from './store.ts';
import { StoreWrites } from './store-writes.ts';
import { writerEntry, type WriterEntry } from './writer-thread.ts';

export interface PgStoreOptions {
  /** postgres://user:password@host:port/database (or a unix socket: ?host=/path/to/dir). */
  url: string;
  undoDepth: number;
  /** Connections kept for reads, open and drop (the writer thread has one more of its own). */
  poolSize?: number;
  /** Test hook: a simulated crash after a write step (see Fault; it crosses to the writer thread). */
  fault?: Fault;
  /** Outputs and spends written per transaction at most (default ROWS_AHEAD). For tests. */
  rowsPerTransaction?: number;
  /** Test hook: from the sources, start the writer from its TypeScript module through tsx even when dist/ is current. */
  writerFromSources?: boolean;
}

/**
 * Rows the scanner may hand over while a run is written, and the most one transaction takes. The runs that
 * queue behind a transaction are written as one (group commit): a run costs four round trips and one
 * commit whatever its size, and the server's work per row falls with larger arrays.
 */
const ROWS_AHEAD = 20_000;

// The writer thread's module: next to this one, compiled (dist/, .js) or not (tsx, .ts).
const WRITER_MODULE = new URL(`./pg-writer-thread${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export class PgExplorerStore implements ExplorerStore {
  readonly rowsAhead = ROWS_AHEAD;
  private pool: pg.Pool | null = null;
  private readonly kept: KeptBlocks;
  /** Open and drop, one at a time, after the writer thread has stopped. */
  private writing: Promise<unknown> = Promise.resolve();
  private readonly writes: StoreWrites;
  private entry: WriterEntry | undefined;
  private fault: Fault | undefined;

  constructor(private readonly opts: PgStoreOptions) {
    this.kept = new KeptBlocks(opts.undoDepth);
    // When a writer thread dies, its transaction in hand is rolled back with its connection; what it
    // reported committed is kept.
    this.writes = new StoreWrites(
      this.kept,
      () => this.writerStart(),
      () => {},
    );
    this.fault = opts.fault;
  }

  private get db(): pg.Pool {
    if (!this.pool) {
      this.pool = new (loadPg().Pool)({ connectionString: this.opts.url, max: this.opts.poolSize ?? 4, idleTimeoutMillis: 30_000 });
      // An idle connection that breaks (server restart) must not crash the node; the next query reconnects.
      this.pool.on('error', () => {});
    }
    return this.pool;
  }

  /** `fn` in one write transaction on a pooled connection (open, drop). */
  private async tx<T>(fn: (c: pg.PoolClient, tip: Tip | null) => Promise<T>): Promise<T> {
    const c = await this.db.connect();
    try {
      return await writeTransaction(c, (tip) => fn(c, tip));
    } finally {
      c.release();
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.writing.then(fn, fn);
    this.writing = p.catch(() => {});
    return p;
  }

  async open(): Promise<Tip | null> {
    await this.writes.stop();
    this.entry ??= await writerEntry(WRITER_MODULE, this.opts.writerFromSources);
    return this.serial(async () => {
      // Tables first (the writers' transaction reads the tip table).
      const c = await this.db.connect();
      try {
        await c.query(`BEGIN; SELECT pg_advisory_xact_lock(${WRITER_LOCK}); ${SCHEMA_SQL} COMMIT`);
      } catch (e) {
        await c.query('ROLLBACK').catch(() => {});
        throw e;
      } finally {
        c.release();
      }
      return this.tx(async (c) => {
        const v = (await c.query<{ value: string }>(`SELECT value FROM explorer_meta WHERE key = 'schema'`)).rows[0]?.value;
        if (v === undefined) await c.query(`INSERT INTO explorer_meta VALUES ('schema', $1)`, [SCHEMA]);
        else if (v === '1')
          // The balance table was just made: fill it from the outputs held (one scan), rather than rebuild from the daemon.
          await c.query(
            `DELETE FROM explorer_balance; INSERT INTO explorer_balance SELECT address, sum(satoshis) FROM explorer_utxo GROUP BY address; UPDATE explorer_meta SET value = '${SCHEMA}' WHERE key = 'schema'`,
          );
        else if (v !== SCHEMA) throw new IndexInconsistentError(`explorer index: schema ${v}, this version reads ${SCHEMA}`);
        return this.load(c);
      });
    });
  }

  /** Read the tip and the kept block hashes. */
  private async load(c: pg.PoolClient): Promise<Tip | null> {
    const tip = (await c.query<{ value: string }>(`SELECT value FROM explorer_meta WHERE key = 'tip'`)).rows[0];
    const heads = await c.query<{ height: number; hash: string; prev: string }>('SELECT height, hash, prev FROM explorer_journal ORDER BY height');
    return this.kept.load(tip ? (JSON.parse(tip.value) as Tip) : null, heads.rows);
  }

  tip(): Tip | null {
    return this.kept.tip();
  }

  hashAt(height: number): string | null {
    return this.kept.hashAt(height);
  }

  lowestUndoTarget(): number | null {
    return this.kept.lowestUndoTarget();
  }

  /** How a writer thread starts now (at the first write after open, or after one died). */
  private writerStart(): { entry: WriterEntry; data: PgWriterData } {
    if (!this.entry) throw new Error('explorer index is not open');
    const data: PgWriterData = { url: this.opts.url, undoDepth: this.opts.undoDepth, rowsPerTransaction: this.opts.rowsPerTransaction ?? ROWS_AHEAD, fault: this.fault };
    this.fault = undefined;
    return { entry: this.entry, data };
  }

  applyBlocks(blocks: ParsedBlock[], chainHeight?: number): Promise<void> {
    return this.writes.apply(blocks, chainHeight);
  }

  undoTip(): Promise<void> {
    return this.writes.undo();
  }

  /** Forget everything: the tables are made again, so an index of another schema version is replaced too. */
  async drop(): Promise<void> {
    await this.writes.stop();
    return this.serial(() =>
      this.tx(async (c) => {
        await c.query(`DROP TABLE IF EXISTS explorer_utxo, explorer_tx, explorer_balance, explorer_journal, explorer_meta; ${SCHEMA_SQL}`);
        await c.query(`INSERT INTO explorer_meta VALUES ('schema', $1)`, [SCHEMA]);
        this.kept.clear();
      }),
    );
  }

  async utxos(address: string, page?: Page<UtxoCursor>): Promise<Utxo[]> {
    const a = page?.after;
    // Named, as every read here: parsed and planned once per connection, not at every request.
    const r = await this.db.query<Row>({
      name: 'explorer_utxos',
      text: `SELECT * FROM explorer_utxo WHERE address = $1 AND (height, txid, vout) > ($2, $3, $4) ORDER BY address, height, txid, vout LIMIT $5 OFFSET $6`,
      values: [address, a ? a.height : -1, a ? hex(a.txid) : Buffer.alloc(0), a ? a.vout : -1, page?.limit ?? null, page?.offset ?? 0],
    });
    return r.rows.map(toUtxo);
  }

  async transactions(address: string, page?: Page<TxCursor>): Promise<TxRef[]> {
    const a = page?.after;
    const r = await this.db.query<{ nheight: number; txid: Buffer }>({
      name: 'explorer_transactions',
      text: `SELECT nheight, txid FROM explorer_tx WHERE address = $1 AND (nheight, txid) > ($2, $3) ORDER BY address, nheight, txid LIMIT $4 OFFSET $5`,
      values: [address, a ? -a.height : -2147483647, a ? hex(a.txid) : Buffer.alloc(0), page?.limit ?? null, page?.offset ?? 0],
    });
    return r.rows.map((x) => ({ txid: x.txid.toString('hex'), height: -x.nheight }));
  }

  async balance(address: string): Promise<bigint> {
    const r = await this.db.query<{ s: string }>({ name: 'explorer_balance', text: 'SELECT satoshis::text AS s FROM explorer_balance WHERE address = $1', values: [address] });
    return BigInt(r.rows[0]?.s ?? 0);
  }

  async close(): Promise<void> {
    await this.writes.stop();
    await this.writing;
    const p = this.pool;
    this.pool = null;
    await p?.end();
  }
}
