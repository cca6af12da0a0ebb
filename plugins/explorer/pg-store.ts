/**
 * The explorer index in PostgreSQL (config `explorer.store: { kind: postgres, url }`), for operators who
 * share one index between nodes or outgrow one disk. Same tables and keys as the embedded store (prefixed
 * `explorer_`, addresses in the "C" collation so key order is byte order whatever the database's locale).
 *
 * A run of blocks is one transaction of three round trips whatever its size: start (with the writer lock
 * and the stored tip), the delete of the held outputs it spends (which returns them to the plan), and one
 * statement that takes whole arrays (`unnest`, sent in binary) for everything else it writes; then the
 * commit. Writers take a transaction-scoped advisory lock and check that the stored tip is the one this
 * node last wrote: several nodes may share one index, one writes at a time, and a node that finds the tip
 * moved by another reloads it and carries on from there.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import { KeptBlocks } from './kept-blocks.ts';
import { boolArray, byteaArrayFromHex, int4Array, int8Array, textArray } from './pg-arrays.ts';
import { addBalances, assertExtends, hex, packUndo, planRun, unpackUndo, type BlockUndo, type OutPoint } from './plan.ts';
import { IndexInconsistentError, type ExplorerStore, type Page, type ParsedBlock, type Tip, type TxCursor, type TxRef, type Utxo, type UtxoCursor, faultHook, type Fault } from './store.ts';

// pg loads when a PostgreSQL store is opened, not with the plugin: imported eagerly it cost every node
// about 9 MB of idle RSS and 75 ms of CPU at start (measured), and the default store is SQLite.
const require = createRequire(import.meta.url);

export interface PgStoreOptions {
  /** postgres://user:password@host:port/database (or a unix socket: ?host=/path/to/dir). */
  url: string;
  undoDepth: number;
  /** Connections kept: one for the writer, the rest for concurrent reads. */
  poolSize?: number;
  /** Test hook: a simulated crash after a write step (see Fault). */
  fault?: Fault;
}

/** 2: the running balance per address (`explorer_balance`); an index of schema 1 gets it at open. */
const SCHEMA = '2';
/** Serialises writers of every node sharing the database (an arbitrary constant: "corenode explorer"). */
const WRITER_LOCK = 0x636f7265;

const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS explorer_utxo (
  txid bytea NOT NULL, vout integer NOT NULL, address text COLLATE "C" NOT NULL, height integer NOT NULL,
  satoshis bigint NOT NULL, script bytea NOT NULL, coinbase boolean NOT NULL,
  PRIMARY KEY (txid, vout));
CREATE INDEX IF NOT EXISTS explorer_utxo_by_address ON explorer_utxo (address, height, txid, vout) INCLUDE (satoshis);
CREATE TABLE IF NOT EXISTS explorer_tx (
  address text COLLATE "C" NOT NULL, nheight integer NOT NULL, txid bytea NOT NULL,
  PRIMARY KEY (address, nheight, txid));
CREATE TABLE IF NOT EXISTS explorer_balance (address text COLLATE "C" PRIMARY KEY, satoshis bigint NOT NULL);
CREATE TABLE IF NOT EXISTS explorer_journal (height integer PRIMARY KEY, hash text NOT NULL, prev text NOT NULL, undo text NOT NULL);
CREATE TABLE IF NOT EXISTS explorer_meta (key text PRIMARY KEY, value text NOT NULL);
`;

type Row = { txid: Buffer; vout: number; address: string; height: number; satoshis: string; script: Buffer; coinbase: boolean };
const toUtxo = (r: Row): Utxo => ({
  txid: r.txid.toString('hex'),
  vout: r.vout,
  address: r.address,
  height: r.height,
  satoshis: Number(r.satoshis),
  scriptPubKey: r.script.toString('hex'),
  coinbase: r.coinbase,
});

// Every array goes in the server's binary format (pg-arrays.ts): txids and scripts as their bytes, nothing
// quoted here or parsed there.
const OUTPUT_ROWS = (n: number) =>
  `SELECT * FROM unnest($${n}::bytea[], $${n + 1}::int4[], $${n + 2}::text[], $${n + 3}::int4[], $${n + 4}::int8[], $${n + 5}::bytea[], $${n + 6}::bool[])`;
const PUT_OUTPUTS = `INSERT INTO explorer_utxo ${OUTPUT_ROWS(1)} ON CONFLICT DO NOTHING`;
/** Outpoints joined to the outputs table; `RETURNING` what the caller needs. */
const takeOutputs = (returning: string) =>
  `DELETE FROM explorer_utxo u USING unnest($1::bytea[], $2::int4[]) AS d(txid, vout) WHERE u.txid = d.txid AND u.vout = d.vout RETURNING ${returning}`;
/** A run's spent outputs, whole (for its plan and undo records). */
const TAKE_SPENT = takeOutputs('u.*');
/** An undone block's outputs: what the balances need. */
const TAKE_CREATED = takeOutputs('u.address, u.satoshis');
const ADD_BALANCES = `INSERT INTO explorer_balance SELECT * FROM unnest($1::text[], $2::int8[])
  ON CONFLICT (address) DO UPDATE SET satoshis = explorer_balance.satoshis + excluded.satoshis`;
const DEL_TXS = `DELETE FROM explorer_tx t USING unnest($1::text[], $2::int4[], $3::bytea[]) AS d(address, nheight, txid)
  WHERE t.address = d.address AND t.nheight = d.nheight AND t.txid = d.txid`;
const SET_TIP = `INSERT INTO explorer_meta VALUES ('tip', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;

/** The later output replaces the one held, as the embedded store's `INSERT OR REPLACE` and Bitcoin Core's UTXO set do. */
const REPLACE_OUTPUT = 'address = excluded.address, height = excluded.height, satoshis = excluded.satoshis, script = excluded.script, coinbase = excluded.coinbase';

/**
 * The run's writes after the lookup took its spent outputs away (one statement, one round trip). Outputs and
 * entries go in as plain inserts: `ON CONFLICT` searched each key's unique index once more before inserting
 * it (perf of the server: B-tree descents were a third of its CPU). A key already held can only come from
 * a duplicate coinbase (BIP30: two on mainnet, none since BIP34); its unique violation rolls the run back,
 * which is then written again with `ON CONFLICT` (`tolerant`): the later output replaces the held one.
 */
const writeRunSql = (tolerant: boolean) => `
WITH journal AS (INSERT INTO explorer_journal SELECT * FROM unnest($1::int4[], $2::text[], $3::text[], $4::text[])),
  outputs AS (INSERT INTO explorer_utxo ${OUTPUT_ROWS(5)}${tolerant ? ` ON CONFLICT (txid, vout) DO UPDATE SET ${REPLACE_OUTPUT}` : ''}),
  entries AS (INSERT INTO explorer_tx SELECT * FROM unnest($12::text[], $13::int4[], $14::bytea[])${tolerant ? ' ON CONFLICT DO NOTHING' : ''}),
  pruned AS (DELETE FROM explorer_journal WHERE height <= $16),
  balances AS (INSERT INTO explorer_balance SELECT * FROM unnest($17::text[], $18::int8[])
    ON CONFLICT (address) DO UPDATE SET satoshis = explorer_balance.satoshis + excluded.satoshis)
INSERT INTO explorer_meta VALUES ('tip', $15) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
/** Named: parsed once per connection, not per run. */
const WRITE_RUN = { strict: { name: 'explorer_write_run', text: writeRunSql(false) }, tolerant: { name: 'explorer_write_run_tolerant', text: writeRunSql(true) } };
/** PostgreSQL's SQLSTATE for a unique violation. */
const UNIQUE_VIOLATION = '23505';

const outputColumns = (os: Utxo[]) => [
  byteaArrayFromHex(os.map((o) => o.txid)),
  int4Array(os.map((o) => o.vout)),
  textArray(os.map((o) => o.address)),
  int4Array(os.map((o) => o.height)),
  int8Array(os.map((o) => o.satoshis)),
  byteaArrayFromHex(os.map((o) => o.scriptPubKey)),
  boolArray(os.map((o) => o.coinbase)),
];

/**
 * Rows the scanner may hand over while a run is written. The runs that queue behind a transaction are
 * written as one (group commit): a run costs four round trips and one commit whatever its size, and the
 * server's work per row falls with larger arrays.
 */
const ROWS_AHEAD = 20_000;

type Queued = { blocks: ParsedBlock[]; chainHeight?: number; resolve: () => void; reject: (e: unknown) => void };

export class PgExplorerStore implements ExplorerStore {
  readonly rowsAhead = ROWS_AHEAD;
  private pool: pg.Pool | null = null;
  private readonly kept: KeptBlocks;
  /** One write at a time from this node (the advisory lock orders nodes). */
  private writing: Promise<unknown> = Promise.resolve();
  /** Runs handed over and not yet in a transaction: the next write takes them all, in order. */
  private queued: Queued[] = [];

  /** Counts write steps across runs, so a test's fault strikes once at the nth. */
  private readonly fault: ReturnType<typeof faultHook>;

  constructor(private readonly opts: PgStoreOptions) {
    this.kept = new KeptBlocks(opts.undoDepth);
    this.fault = faultHook(opts.fault);
  }

  private get db(): pg.Pool {
    if (!this.pool) {
      this.pool = new (require('pg') as typeof pg).Pool({ connectionString: this.opts.url, max: this.opts.poolSize ?? 4, idleTimeoutMillis: 30_000 });
      // An idle connection that breaks (server restart) must not crash the node; the next query reconnects.
      this.pool.on('error', () => {});
    }
    return this.pool;
  }

  /**
   * Run `fn` in one transaction holding the writer lock; rolled back when it throws. The commit does not
   * wait for the server's disk (synchronous_commit off, this transaction only): the index is derived from
   * the chain, and a crash of the database server loses at most the last runs, whole, with the tip that
   * names them, so the scanner fetches them again. A killed node loses nothing committed either way.
   */
  private async tx<T>(fn: (c: pg.PoolClient, tip: Tip | null) => Promise<T>): Promise<T> {
    const c = await this.db.connect();
    try {
      // One round trip (simple protocol, several statements): start, relax the commit, steer the planner, take
      // the lock, read the tip. A run's statements join arrays of a few hundred outpoints with tables of
      // millions of rows, where one index lookup per key is right whatever the sizes; the planner chose a
      // hash join over a sequential scan of the whole outputs table instead (EXPLAIN ANALYZE: 22 ms of a
      // lookup at 15,000 rows, and growing with the table; the run's write 84 of its 118 ms at 1,000
      // regtest-sized blocks, scripts/bench/explorer-pg-runs.ts), so hash and merge joins are off here.
      const answers = (await c.query(
        `BEGIN; SET LOCAL synchronous_commit TO OFF; SET LOCAL enable_hashjoin TO OFF; SET LOCAL enable_mergejoin TO OFF; SELECT pg_advisory_xact_lock(${WRITER_LOCK}); SELECT value FROM explorer_meta WHERE key = 'tip'`,
      )) as unknown as pg.QueryResult<{ value: string }>[];
      const row = answers.at(-1)?.rows[0];
      const out = await fn(c, row ? (JSON.parse(row.value) as Tip) : null);
      await c.query('COMMIT');
      return out;
    } catch (e) {
      await c.query('ROLLBACK').catch(() => {});
      throw e;
    } finally {
      c.release();
    }
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = this.writing.then(fn, fn);
    this.writing = p.catch(() => {});
    return p;
  }

  open(): Promise<Tip | null> {
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

  /** Inside a write: the stored tip must be the one this node knows, else another node wrote meanwhile. */
  private async checkTip(c: pg.PoolClient, stored: Tip | null): Promise<void> {
    const known = this.kept.tip();
    if (stored?.height === known?.height && stored?.hash === known?.hash) return;
    await this.load(c);
    throw new Error(`explorer index: another writer moved the tip to ${stored ? stored.height : 'nothing'}; continuing from there`);
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

  applyBlocks(blocks: ParsedBlock[], chainHeight?: number): Promise<void> {
    if (!blocks.length) return Promise.resolve();
    return new Promise((resolve, reject) => {
      // The first run queued schedules the write that takes every run queued by the time it starts.
      if (this.queued.push({ blocks, chainHeight, resolve, reject }) === 1) this.serial(() => this.writeQueued()).catch(() => {});
    });
  }

  /** Write every queued run as one transaction; a failure fails them all (each extends the one before). */
  private async writeQueued(): Promise<void> {
    const group = this.queued;
    this.queued = [];
    try {
      // The chain's height as the newest run saw it.
      await this.writeRun(group.flatMap((q) => q.blocks), group.at(-1)!.chainHeight);
      for (const q of group) q.resolve();
    } catch (e) {
      for (const q of group) q.reject(e);
    }
  }

  private async writeRun(blocks: ParsedBlock[], chainHeight: number | undefined): Promise<void> {
    assertExtends(this.kept.tip(), blocks);
    const floor = this.kept.floor(blocks.at(-1)!.height, chainHeight);
    try {
      await this.writeRunOnce(blocks, floor, false);
    } catch (e) {
      if ((e as { code?: string }).code !== UNIQUE_VIOLATION) throw e;
      await this.writeRunOnce(blocks, floor, true);
    }
  }

  private async writeRunOnce(blocks: ParsedBlock[], floor: number, tolerant: boolean): Promise<void> {
    const fault = this.fault;
    const last = blocks.at(-1)!;
    const plan = await this.tx(async (c, stored) => {
      await this.checkTip(c, stored);
      // The lookup takes the outputs away as it finds them: every output of earlier runs the run spends and
      // the store holds is removed (planRun's `removed` is exactly what the lookup found), so one B-tree
      // descent a spent output finds and deletes it, and its key travels once. A plan that throws rolls it back.
      const lookup = async (keys: OutPoint[]) => {
        const r = await c.query<Row>({
          // Named: parsed once per connection, not per run.
          name: 'explorer_take_spent',
          text: TAKE_SPENT,
          values: [byteaArrayFromHex(keys.map((k) => k.txid)), int4Array(keys.map((k) => k.vout))],
        });
        return r.rows.map(toUtxo);
      };
      const plan = await planRun(blocks, lookup);
      const journal = plan.undo.filter((u) => u.height > floor);
      // The rest of the run in one statement (one round trip): journal records, new outputs and entries, old
      // journal records pruned, balances, the tip moved. Inside the transaction the crash points of the
      // tests all fall after it (a crash anywhere in the transaction is a rollback).
      await c.query({ ...(tolerant ? WRITE_RUN.tolerant : WRITE_RUN.strict), values: [
        int4Array(journal.map((u) => u.height)),
        textArray(journal.map((u) => u.hash)),
        textArray(journal.map((u) => u.prev)),
        textArray(journal.map(packUndo)),
        ...outputColumns(plan.created),
        textArray(plan.txs.map((t) => t.address)),
        int4Array(plan.txs.map((t) => -t.height)),
        byteaArrayFromHex(plan.txs.map((t) => t.txid)),
        JSON.stringify({ height: last.height, hash: last.hash }),
        floor,
        textArray([...plan.balances.keys()]),
        int8Array([...plan.balances.values()]),
      ] });
      for (const step of ['journal', 'spent', 'added', 'tip'] as const) fault(step);
      return plan;
    });
    this.kept.applied(plan.undo, floor);
  }

  undoTip(): Promise<void> {
    return this.serial(async () => {
      const tip = this.kept.undoable();
      const fault = this.fault;
      const j = await this.tx(async (c, stored) => {
        await this.checkTip(c, stored);
        const r = (await c.query<{ height: number; hash: string; prev: string; undo: string }>('SELECT * FROM explorer_journal WHERE height = $1', [tip.height])).rows[0];
        if (!r) throw new IndexInconsistentError(`explorer index: journal record of block ${tip.height} is missing`);
        const j = unpackUndo(r.height, r.hash, r.prev, r.undo);
        fault('undo-marked');
        await this.revert(c, j);
        fault('reverted');
        await c.query(SET_TIP, [JSON.stringify({ height: j.height - 1, hash: j.prev })]);
        await c.query('DELETE FROM explorer_journal WHERE height = $1', [j.height]);
        return j;
      });
      this.kept.undone(j);
    });
  }

  private async revert(c: pg.PoolClient, j: BlockUndo): Promise<void> {
    const gone = j.outputs.length
      ? (await c.query<{ address: string; satoshis: string }>(TAKE_CREATED, [byteaArrayFromHex(j.outputs.map((o) => o.txid)), int4Array(j.outputs.map((o) => o.vout))])).rows
      : [];
    if (j.txs.length) await c.query(DEL_TXS, [textArray(j.txs.map((t) => t.address)), int4Array(j.txs.map(() => -j.height)), byteaArrayFromHex(j.txs.map((t) => t.txid))]);
    if (j.spent.length) await c.query(PUT_OUTPUTS, outputColumns(j.spent));
    const moved = [...addBalances(addBalances(new Map(), j.spent, 1), gone, -1)].filter(([, d]) => d !== 0n);
    if (moved.length) await c.query(ADD_BALANCES, [textArray(moved.map(([a]) => a)), int8Array(moved.map(([, d]) => d))]);
  }

  /** Forget everything: the tables are made again, so an index of another schema version is replaced too. */
  drop(): Promise<void> {
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
    await this.writing;
    const p = this.pool;
    this.pool = null;
    await p?.end();
  }
}
