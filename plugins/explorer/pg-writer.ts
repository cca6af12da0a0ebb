/**
 * The write side of the PostgreSQL index: one connection of its own that writes runs of blocks and undoes
 * the tip. It runs on the store's writer thread (`pg-writer-thread.ts`), so planning a run, packing its
 * undo records and encoding its arrays (0.05-0.07 ms of CPU a regtest block, in stretches of 30-60 ms a
 * run, scripts/bench/explorer-replay.ts) happen beside the node's thread rather than between the daemon's
 * answers it takes, as the server's own work already did.
 *
 * A run of blocks is one transaction of three round trips whatever its size: start (with the writer lock
 * and the stored tip), the delete of the held outputs it spends (which returns them to the plan), and one
 * statement that takes whole arrays (`unnest`, sent in binary) for everything else it writes; then the
 * commit. Writers take a transaction-scoped advisory lock and check that the stored tip is the one the
 * store expects (`base`): several nodes may share one index, one writes at a time, and a node that finds
 * the tip moved by another fails the run; its scanner opens the store again and carries on from there.
 */
import type pg from 'pg';
import { journalFloor, type Head } from './kept-blocks.ts';
import { boolArray, byteaArrayFromHex, int4Array, int8Array, textArray } from './pg-arrays.ts';
import { loadPg, toUtxo, writeTransaction, type Row } from './pg-schema.ts';
import { addBalances, packUndo, planRun, unpackUndo, type BlockUndo, type OutPoint } from './plan.ts';
import { IndexInconsistentError, faultHook, type Fault, type ParsedBlock, type Tip, type Utxo } from './store.ts';
import type { Writer } from './writer-loop.ts';

export interface PgWriterOptions {
  url: string;
  undoDepth: number;
  fault?: Fault;
}

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

export class PgWriter implements Writer {
  private client: pg.Client | null = null;
  private broken = false;
  /** Counts write steps across runs, so a test's fault strikes once at the nth. */
  private readonly fault: ReturnType<typeof faultHook>;

  constructor(private readonly opts: PgWriterOptions) {
    this.fault = faultHook(opts.fault);
  }

  /** The connection, made again after it broke (a restarted server): the next request reconnects. */
  private async connection(): Promise<pg.Client> {
    if (this.client && !this.broken) return this.client;
    this.client?.end().catch(() => {});
    const c = new (loadPg().Client)({ connectionString: this.opts.url });
    this.broken = false;
    c.on('error', () => (this.broken = true));
    this.client = c;
    try {
      await c.connect();
    } catch (e) {
      this.broken = true;
      throw e;
    }
    return c;
  }

  private async tx<T>(base: Tip | null, fn: (c: pg.Client) => Promise<T>): Promise<T> {
    const c = await this.connection();
    return writeTransaction(c, async (stored) => {
      // Another node sharing the index wrote meanwhile, or a run this one extends was not written.
      const at = (t: Tip | null) => (t ? `${t.height} (${t.hash})` : 'nothing');
      if (stored?.height !== base?.height || stored?.hash !== base?.hash) throw new Error(`explorer index: the stored tip is ${at(stored)}, not ${at(base)} as this write expects`);
      return fn(c);
    });
  }

  async applyRun(blocks: ParsedBlock[], chainHeight: number | undefined, base: Tip | null): Promise<{ heads: Head[]; floor: number }> {
    // That `blocks` extend `base` was checked by the store before they crossed (store-writes.ts).
    const floor = journalFloor(this.opts.undoDepth, blocks.at(-1)!.height, chainHeight);
    try {
      await this.writeRunOnce(blocks, base, floor, false);
    } catch (e) {
      if ((e as { code?: string }).code !== UNIQUE_VIOLATION) throw e;
      await this.writeRunOnce(blocks, base, floor, true);
    }
    return { heads: blocks.map((b) => ({ height: b.height, hash: b.hash, prev: b.prev })), floor };
  }

  private async writeRunOnce(blocks: ParsedBlock[], base: Tip | null, floor: number, tolerant: boolean): Promise<void> {
    const fault = this.fault;
    const last = blocks.at(-1)!;
    await this.tx(base, async (c) => {
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
    });
  }

  async undoTip(height: number, base: Tip | null): Promise<Head> {
    const fault = this.fault;
    return this.tx(base, async (c) => {
      const r = (await c.query<{ height: number; hash: string; prev: string; undo: string }>('SELECT * FROM explorer_journal WHERE height = $1', [height])).rows[0];
      if (!r) throw new IndexInconsistentError(`explorer index: journal record of block ${height} is missing`);
      const j = unpackUndo(r.height, r.hash, r.prev, r.undo);
      fault('undo-marked');
      await this.revert(c, j);
      fault('reverted');
      await c.query(SET_TIP, [JSON.stringify({ height: j.height - 1, hash: j.prev })]);
      await c.query('DELETE FROM explorer_journal WHERE height = $1', [j.height]);
      return { height: j.height, hash: j.hash, prev: j.prev };
    });
  }

  private async revert(c: pg.Client, j: BlockUndo): Promise<void> {
    const gone = j.outputs.length
      ? (await c.query<{ address: string; satoshis: string }>(TAKE_CREATED, [byteaArrayFromHex(j.outputs.map((o) => o.txid)), int4Array(j.outputs.map((o) => o.vout))])).rows
      : [];
    if (j.txs.length) await c.query(DEL_TXS, [textArray(j.txs.map((t) => t.address)), int4Array(j.txs.map(() => -j.height)), byteaArrayFromHex(j.txs.map((t) => t.txid))]);
    if (j.spent.length) await c.query(PUT_OUTPUTS, outputColumns(j.spent));
    const moved = [...addBalances(addBalances(new Map(), j.spent, 1), gone, -1)].filter(([, d]) => d !== 0n);
    if (moved.length) await c.query(ADD_BALANCES, [textArray(moved.map(([a]) => a)), int8Array(moved.map(([, d]) => d))]);
  }

  async close(): Promise<void> {
    const c = this.client;
    this.client = null;
    await c?.end().catch(() => {});
  }
}
