/**
 * What the PostgreSQL store's two sides share (the store on the node's thread: open, reads, drop; its
 * writer on the writer thread: runs and undos): the tables, the row shape, the writers' lock, and the
 * transaction every write runs in.
 */
import { createRequire } from 'node:module';
import type pg from 'pg';
import type { Tip, Utxo } from './store.ts';

// pg loads when a PostgreSQL store is opened, not with the plugin: imported eagerly it cost every node
// about 9 MB of idle RSS and 75 ms of CPU at start (measured), and the default store is SQLite.
const require = createRequire(import.meta.url);
export const loadPg = () => require('pg') as typeof pg;

/** 2: the running balance per address (`explorer_balance`); an index of schema 1 gets it at open. */
export const SCHEMA = '2';
/** Serialises writers of every node sharing the database (an arbitrary constant: "corenode explorer"). */
export const WRITER_LOCK = 0x636f7265;

export const SCHEMA_SQL = `
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

export type Row = { txid: Buffer; vout: number; address: string; height: number; satoshis: string; script: Buffer; coinbase: boolean };
export const toUtxo = (r: Row): Utxo => ({
  txid: r.txid.toString('hex'),
  vout: r.vout,
  address: r.address,
  height: r.height,
  satoshis: Number(r.satoshis),
  scriptPubKey: r.script.toString('hex'),
  coinbase: r.coinbase,
});

/**
 * Run `fn` on `c` in one transaction holding the writer lock, given the stored tip; rolled back when it
 * throws. The commit does not wait for the server's disk (synchronous_commit off, this transaction only):
 * the index is derived from the chain, and a crash of the database server loses at most the last runs,
 * whole, with the tip that names them, so the scanner fetches them again. A killed node loses nothing
 * committed either way.
 */
export async function writeTransaction<T>(c: pg.ClientBase, fn: (tip: Tip | null) => Promise<T>): Promise<T> {
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
    const out = await fn(row ? (JSON.parse(row.value) as Tip) : null);
    await c.query('COMMIT');
    return out;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => {});
    throw e;
  }
}
