/**
 * The embedded explorer index: one SQLite file (better-sqlite3), chosen by measurement over LMDB and LevelDB
 * (README, "Choice of the embedded engine"). Memory stays bounded whatever the chain size: SQLite reads the
 * pages a query needs through a fixed page cache, and opening the file reads nothing but its schema. Tables
 * and rows: `sqlite-db.ts`.
 *
 * Two connections. Writes go to a writer thread (`sqlite-writer-thread.ts`, started at the first write)
 * that owns the write connection, so the store's CPU per run (22-26 ms a run of 32 regtest blocks, about
 * 60% of it in the commit, measured) runs beside the node's thread instead of in series with fetching and
 * parsing blocks. Reads (`utxos`, `transactions`, `balance`) stay on this thread on their own connection:
 * in WAL mode a reader sees the last commit, and a run is one transaction, so no reader sees half of it.
 * The tip and kept block hashes (`KeptBlocks`) are kept here, moved by what the writer reports committed
 * (`store-writes.ts`, as in the PostgreSQL store).
 *
 * A run of blocks is one SQLite transaction, or a few runs that queued up while the writer was busy (group
 * commit); a long run is split into transactions of whole blocks. A kill at any point leaves whole blocks
 * only, the tip at the last one, so open() has nothing to repair.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import { KeptBlocks } from './kept-blocks.ts';
import { hex } from './plan.ts';
import { openIndexFile, PAGE_SIZE, readHeads, toUtxo, type Row } from './sqlite-db.ts';
import type { WriterData } from './sqlite-writer-thread.ts';
import { StoreWrites } from './store-writes.ts';
import { writerEntry, type WriterEntry } from './writer-thread.ts';
import { type ExplorerStore, type Fault, type Page, type ParsedBlock, type Tip, type TxCursor, type TxRef, type Utxo, type UtxoCursor } from './store.ts';

export interface SqliteStoreOptions {
  /** Blocks whose undo records are kept: the deepest reorg or rescan that is undone exactly. */
  undoDepth: number;
  /** SQLite page cache in MB of the write connection (the read connection gets a quarter, at least 2). */
  cacheMb?: number;
  /** Page size of a new index file (bytes; an existing file keeps its own). For the write-pattern benchmark. */
  pageSize?: number;
  /** Outputs and spends written per transaction at most. For the write-pattern benchmark. */
  rowsPerTransaction?: number;
  /** Rows the scanner hands over before the earlier ones are written (see ExplorerStore.rowsAhead). */
  rowsAhead?: number;
  /** Test hook: a simulated crash in the writer thread (the first writer thread only: a crash happens once). */
  fault?: Fault;
  /** Test hook: from the sources, start the writer from its TypeScript module through tsx even when dist/ is current. */
  writerFromSources?: boolean;
}

/**
 * Outputs and spends written per transaction at most. Measured (200,000 synthetic outputs, busy 2 cores):
 * 4,000 rows a transaction 7,600 outputs/s, 20,000 rows 9,000 outputs/s. Reads no longer wait behind a
 * transaction (they are on another connection); the bound keeps the write-ahead log's size in check.
 */
const ROWS_PER_TRANSACTION = 20_000;
/**
 * Rows in flight to the writer by default: as many as one transaction takes, so that while the writer
 * commits, the runs that arrive meanwhile queue up to a whole transaction's worth and go in as one (group
 * commit). The commit is most of the writer's CPU, and what it writes grows with the pages a transaction
 * dirties, not with its rows, once the rows outnumber the pages of the tables they land in: writer CPU a
 * regtest block 0.78 ms in transactions of 32 blocks, 0.46 ms of 128, 0.32 ms of 512 (SqliteWriter alone,
 * 4,000 synthetic regtest-sized blocks). Runs at most 3 ahead gave transactions of at most 96 blocks.
 */
const ROWS_AHEAD = ROWS_PER_TRANSACTION;

// The writer thread's module: next to this one, compiled (dist/, .js) or not (tsx, .ts).
const WRITER_MODULE = new URL(`./sqlite-writer-thread${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export class SqliteExplorerStore implements ExplorerStore {
  readonly rowsAhead: number;
  private db: Database.Database | null = null;
  private st: ReturnType<typeof prepareReads> | null = null;
  private readonly kept: KeptBlocks;
  private readonly writes: StoreWrites;
  /** How its writer thread starts (found at open: whether dist/ is current is checked asynchronously). */
  private entry: WriterEntry | undefined;
  private fault: Fault | undefined;

  constructor(
    readonly file: string,
    private readonly opts: SqliteStoreOptions,
  ) {
    this.kept = new KeptBlocks(opts.undoDepth);
    this.rowsAhead = opts.rowsAhead ?? ROWS_AHEAD;
    this.fault = opts.fault;
    this.writes = new StoreWrites(
      this.kept,
      () => this.writerStart(),
      () => this.writerDied(),
    );
  }

  async open(): Promise<Tip | null> {
    await this.writes.stop();
    this.entry ??= await writerEntry(WRITER_MODULE, this.opts.writerFromSources);
    this.db?.close();
    this.db = this.st = null;
    const cacheMb = this.opts.cacheMb ?? 64;
    const db = openIndexFile(this.file, Math.max(2, Math.round(cacheMb / 4)), this.opts.pageSize ?? PAGE_SIZE);
    this.db = db;
    this.st = prepareReads(db);
    const { tip, heads } = readHeads(db);
    return this.kept.load(tip, heads);
  }

  private get reads(): ReturnType<typeof prepareReads> {
    if (!this.st) throw new Error('explorer index is not open');
    return this.st;
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
  private writerStart(): { entry: WriterEntry; data: WriterData } {
    if (!this.db || !this.entry) throw new Error('explorer index is not open');
    const data: WriterData = {
      file: this.file,
      undoDepth: this.opts.undoDepth,
      cacheMb: this.opts.cacheMb ?? 64,
      rowsPerTransaction: this.opts.rowsPerTransaction ?? ROWS_PER_TRANSACTION,
      fault: this.fault,
    };
    this.fault = undefined;
    return { entry: this.entry, data };
  }

  /** A writer thread ended unasked: what it reported committed may not all have arrived; the file is the truth. */
  private writerDied(): void {
    if (!this.db) return;
    const { tip, heads } = readHeads(this.db);
    this.kept.load(tip, heads);
  }

  applyBlocks(blocks: ParsedBlock[], chainHeight?: number): Promise<void> {
    return this.writes.apply(blocks, chainHeight);
  }

  undoTip(): Promise<void> {
    return this.writes.undo();
  }

  async drop(): Promise<void> {
    // Deleting the file is instant where DELETE of tens of millions of rows is not, and gives the space back.
    await this.writes.stop();
    this.db?.close();
    this.db = this.st = null;
    for (const f of [this.file, `${this.file}-wal`, `${this.file}-shm`]) fs.rmSync(f, { force: true });
    await this.open();
  }

  async utxos(address: string, page?: Page<UtxoCursor>): Promise<Utxo[]> {
    const a = page?.after;
    const rows = this.reads.utxos.all(address, a ? a.height : -1, a ? hex(a.txid) : Buffer.alloc(0), a ? a.vout : -1, page?.limit ?? -1, page?.offset ?? 0) as Row[];
    return rows.map(toUtxo);
  }

  async transactions(address: string, page?: Page<TxCursor>): Promise<TxRef[]> {
    const a = page?.after;
    // Entries of a height are keyed by negated height: newest first is ascending key order.
    const rows = this.reads.txs.all(address, a ? -a.height : -Number.MAX_SAFE_INTEGER, a ? hex(a.txid) : Buffer.alloc(0), page?.limit ?? -1, page?.offset ?? 0) as {
      nheight: number;
      txid: Buffer;
    }[];
    return rows.map((r) => ({ txid: r.txid.toString('hex'), height: -r.nheight }));
  }

  async balance(address: string): Promise<bigint> {
    return (this.reads.balance.get(address) as bigint | undefined) ?? 0n;
  }

  async close(): Promise<void> {
    await this.writes.stop();
    this.db?.close();
    this.db = this.st = null;
  }

  /** For the benchmark: the file's size with its write-ahead log. */
  sizeOnDisk(): number {
    let n = 0;
    for (const f of [this.file, `${this.file}-wal`]) n += fs.existsSync(f) ? fs.statSync(f).size : 0;
    return n;
  }
}

function prepareReads(db: Database.Database) {
  return {
    utxos: db.prepare(`SELECT * FROM utxo WHERE address = ? AND (height, txid, vout) > (?, ?, ?) ORDER BY address, height, txid, vout LIMIT ? OFFSET ?`),
    txs: db.prepare(`SELECT nheight, txid FROM tx WHERE address = ? AND (nheight, txid) > (?, ?) ORDER BY address, nheight, txid LIMIT ? OFFSET ?`),
    balance: db.prepare(`SELECT satoshis FROM balance WHERE address = ?`).pluck().safeIntegers(true),
  };
}
