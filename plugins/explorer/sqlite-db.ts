/**
 * The SQLite index file as both of its connections see it: the tables, the pragmas, the rows. The store
 * (`sqlite-store.ts`) reads through one connection on the node's thread; the writer (`sqlite-writer.ts`)
 * writes through another on its own thread (`sqlite-writer-thread.ts`).
 *
 * Tables: `utxo` (unspent outputs, keyed by txid and vout, with an index by address, height, txid, vout
 * that also carries the amount), `tx` (one entry per address and transaction, keyed by address, negated
 * height and txid, so newest first is the key order and a page starts with one seek), `balance` (the
 * running balance per address, moved by every run and undo: one key read answers a balance whatever the
 * address holds), `journal` (per kept block: hash, previous hash, undo record), `meta` (the tip).
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Head } from './kept-blocks.ts';
import { IndexInconsistentError, type Tip, type Utxo } from './store.ts';

/** Bumped when the tables change; an index of another version is rebuilt from the daemon (1 -> 2 is migrated). */
export const SCHEMA = '2';

const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS utxo (
  txid BLOB NOT NULL, vout INTEGER NOT NULL, address TEXT NOT NULL, height INTEGER NOT NULL,
  satoshis INTEGER NOT NULL, script BLOB NOT NULL, coinbase INTEGER NOT NULL,
  PRIMARY KEY (txid, vout)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS utxo_by_address ON utxo (address, height, txid, vout, satoshis);
CREATE TABLE IF NOT EXISTS tx (
  address TEXT NOT NULL, nheight INTEGER NOT NULL, txid BLOB NOT NULL,
  PRIMARY KEY (address, nheight, txid)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS balance (address TEXT PRIMARY KEY, satoshis INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal (height INTEGER PRIMARY KEY, hash TEXT NOT NULL, prev TEXT NOT NULL, undo TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

export const PAGE_SIZE = 4096;

export type Row = { txid: Buffer; vout: number; address: string; height: number; satoshis: number; script: Buffer; coinbase: number };
export const toUtxo = (r: Row): Utxo => ({
  txid: r.txid.toString('hex'),
  vout: r.vout,
  address: r.address,
  height: r.height,
  satoshis: r.satoshis,
  scriptPubKey: r.script.toString('hex'),
  coinbase: r.coinbase === 1,
});

/** A connection with the settings every connection to the index needs; the tables are the store's to make. */
export function connect(file: string, cacheMb: number, pageSize = PAGE_SIZE): Database.Database {
  const db = new Database(file);
  // Before the first table: the page size of a new file (an existing file keeps its own).
  db.pragma(`page_size = ${pageSize}`);
  // WAL: a run commits with one append and one fsync; readers (the other connection) see the last commit.
  db.pragma('journal_mode = WAL');
  // NORMAL under WAL: a kill of the process loses nothing committed (only a power cut may lose the last runs,
  // which the scanner fetches again: the tip moves with them).
  db.pragma('synchronous = NORMAL');
  db.pragma(`cache_size = -${cacheMb * 1024}`);
  db.pragma('temp_store = MEMORY');
  return db;
}

/**
 * Schema 1 summed an address's outputs per balance request (505 ms for an address with 1M outputs, and the
 * p99 of every request behind it); schema 2 keeps the sums. Made once from the outputs held, in one
 * transaction (a scan of the by-address index), instead of a rebuild from the daemon.
 */
function migrateFrom1(db: Database.Database): void {
  db.transaction(() => {
    db.exec(`DELETE FROM balance; INSERT INTO balance SELECT address, sum(satoshis) FROM utxo GROUP BY address`);
    db.prepare(`UPDATE meta SET value = ? WHERE key = 'schema'`).run(SCHEMA);
  })();
}

/** Create the file and its tables if new (`pageSize` for a new file), migrate schema 1; throws on another schema. */
export function openIndexFile(file: string, cacheMb: number, pageSize = PAGE_SIZE): Database.Database {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const conn = connect(file, cacheMb, pageSize);
  try {
    conn.exec(SCHEMA_SQL);
    const version = (conn.prepare(`SELECT value FROM meta WHERE key = 'schema'`).get() as { value: string } | undefined)?.value;
    if (version === undefined) conn.prepare(`INSERT INTO meta VALUES ('schema', ?)`).run(SCHEMA);
    else if (version === '1') migrateFrom1(conn);
    else if (version !== SCHEMA) throw new IndexInconsistentError(`explorer index: schema ${version}, this version reads ${SCHEMA}`);
    return conn;
  } catch (e) {
    conn.close();
    throw e;
  }
}

/** The stored tip and the kept blocks' heads, oldest first. */
export function readHeads(db: Database.Database): { tip: Tip | null; heads: Head[] } {
  const tip = db.prepare(`SELECT value FROM meta WHERE key = 'tip'`).get() as { value: string } | undefined;
  return { tip: tip ? (JSON.parse(tip.value) as Tip) : null, heads: db.prepare(`SELECT height, hash, prev FROM journal ORDER BY height`).all() as Head[] };
}
