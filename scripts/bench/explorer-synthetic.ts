/**
 * The explorer benchmark's synthetic index: a deterministic chain of outputs (no spends), and two ways to
 * write it into a store.
 *
 * - `applyBlocks`: through the store's own write path, runs of 32 blocks (what a node does while catching
 *   up). Tests the real writes; at ~16 KB written per output (README, "SQLite writes at scale") 10M outputs
 *   take over an hour on SQLite, so it is for small sizes.
 * - bulk (`bulkSqlite`, `bulkPostgres`): the same rows written the way a bulk load is done. The store
 *   first opens the empty index (its own tables, keys and schema version); its secondary indexes (and in
 *   PostgreSQL its primary keys) are dropped, the outputs appended unsorted (SQLite: into a staging table of
 *   an attached file; PostgreSQL: COPY through psql), moved into the key-ordered tables with one sorted
 *   `INSERT ... SELECT` each, the running balances made by one GROUP BY, the journal (undo records of the
 *   last `undoDepth` blocks) and the tip written as `applyBlocks` leaves them, then the indexes made again.
 *   The result is the index `applyBlocks` would have written, row for row (test/explorer/synthetic.test.ts).
 *
 * The chain: output n (0 <= n < outputs) is output `n % 4` of its own transaction, in block `n / perBlock`.
 * Every `every`-th output pays the one big address; the others go to `typicalCount` typical addresses (~9
 * each) by a multiplication modulo typicalCount, which is invertible, so the generator can say what any
 * address holds without a table. Each output is one transaction entry of its address. Txids, programs
 * and amounts come from a 32-bit mixing function of the index and the seed: deterministic, unique, and
 * random-looking in key order (txid-keyed pages are written at random, as real txids would be).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import Database from 'better-sqlite3';
import pg from 'pg';
import { polymod } from '../../plugins/explorer/address.ts';
import { PgExplorerStore } from '../../plugins/explorer/pg-store.ts';
import { packUndo, type BlockUndo } from '../../plugins/explorer/plan.ts';
import { SqliteExplorerStore } from '../../plugins/explorer/sqlite-store.ts';
import type { ExplorerStore, ParsedBlock, TxRef, Utxo } from '../../plugins/explorer/store.ts';

export interface SyntheticSpec {
  outputs: number;
  /** Outputs (and transactions) of the one big address; at most half the outputs. */
  big: number;
  perBlock?: number;
  seed?: number;
}

/** murmur3's 32-bit finaliser: a bijection on 32-bit integers, so distinct inputs give distinct words. */
function mix(x: number): number {
  x >>>= 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

const gcd = (a: number, b: number): number => (b ? gcd(b, a % b) : a);
function inverse(p: number, m: number): number {
  let [r0, r1, s0, s1] = [p % m, m, 1, 0];
  while (r1) {
    const q = Math.floor(r0 / r1);
    [r0, r1, s0, s1] = [r1, r0 - q * r1, s1, s0 - q * s1];
  }
  return ((s0 % m) + m) % m;
}

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
/** A regtest P2WPKH address (bech32, hrp `rltc`) for a 20-byte program: valid for the daemon. */
export function regtestAddress(program: Buffer): string {
  const hrp = 'rltc';
  const data = [0];
  let acc = 0;
  let bits = 0;
  for (const b of program) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      data.push((acc >>> bits) & 31);
    }
  }
  if (bits) data.push((acc << (5 - bits)) & 31);
  const exp = [...[...hrp].map((c) => c.charCodeAt(0) >> 5), 0, ...[...hrp].map((c) => c.charCodeAt(0) & 31)];
  const mod = polymod([...exp, ...data, 0, 0, 0, 0, 0, 0]) ^ 1;
  for (let i = 0; i < 6; i++) data.push((mod >>> (5 * (5 - i))) & 31);
  return hrp + '1' + data.map((d) => CHARSET[d]).join('');
}

export class Synthetic {
  readonly outputs: number;
  readonly perBlock: number;
  readonly blocks: number;
  /** Every `every`-th output (n % every === 0) pays the big address. */
  readonly every: number;
  readonly bigCount: number;
  readonly typicalCount: number;
  /** Outputs paying typical addresses. */
  private readonly rest: number;
  private readonly mul: number;
  private readonly inv: number;
  private readonly seeds: { tx: number; addr: number; sats: number; block: number };
  private readonly names: (string | undefined)[];
  readonly big: string;

  constructor(spec: SyntheticSpec) {
    this.outputs = spec.outputs;
    this.perBlock = spec.perBlock ?? 1000;
    this.blocks = Math.ceil(spec.outputs / this.perBlock);
    const seed = spec.seed ?? 1;
    this.seeds = { tx: mix(seed * 4 + 1), addr: mix(seed * 4 + 2), sats: mix(seed * 4 + 3), block: mix(seed * 4 + 4) };
    if (spec.outputs * 8 >= 2 ** 32) throw new Error('at most 536M outputs (txid words come from 32-bit indexes)');
    const big = Math.max(1, Math.min(spec.big, Math.floor(spec.outputs / 2)));
    this.every = Math.max(2, Math.round(spec.outputs / big));
    this.bigCount = Math.ceil(spec.outputs / this.every);
    this.rest = spec.outputs - this.bigCount;
    this.typicalCount = Math.max(1, Math.floor(this.rest / 9));
    let p = 7919;
    while (gcd(p, this.typicalCount) !== 1) p++;
    this.mul = p % this.typicalCount;
    this.inv = inverse(p, this.typicalCount);
    this.names = new Array(this.typicalCount);
    this.big = regtestAddress(this.program(-1));
  }

  /** The 20-byte program of typical address `a` (the big address: -1). */
  program(a: number): Buffer {
    const b = Buffer.allocUnsafe(20);
    for (let k = 0; k < 5; k++) b.writeUInt32BE(mix(((a + 1) * 5 + k) ^ this.seeds.addr), k * 4);
    return b;
  }

  typical(a: number): string {
    return (this.names[a] ??= regtestAddress(this.program(a)));
  }

  /** Typical address index of output n, or -1 for the big address. */
  addressIndex(n: number): number {
    if (n % this.every === 0) return -1;
    const m = n - Math.floor(n / this.every) - 1;
    return (m * this.mul) % this.typicalCount;
  }

  address(n: number): string {
    const a = this.addressIndex(n);
    return a < 0 ? this.big : this.typical(a);
  }

  /** The outputs paying typical address `a`, ascending. */
  outputsOf(a: number): number[] {
    const out: number[] = [];
    for (let m = (a * this.inv) % this.typicalCount; m < this.rest; m += this.typicalCount) out.push(m + Math.floor(m / (this.every - 1)) + 1);
    return out.sort((x, y) => x - y);
  }

  /** The big address's outputs, ascending. */
  bigOutputs(): number[] {
    const out: number[] = [];
    for (let n = 0; n < this.outputs; n += this.every) out.push(n);
    return out;
  }

  /** The big address's balance (without making its 1M outputs). */
  bigBalance(): bigint {
    let sum = 0;
    for (let n = 0; n < this.outputs; n += this.every) sum += this.satoshis(n);
    return BigInt(sum);
  }

  txid(n: number, into = Buffer.allocUnsafe(32)): Buffer {
    for (let k = 0; k < 8; k++) into.writeUInt32BE(mix((n * 8 + k) ^ this.seeds.tx), k * 4);
    return into;
  }
  vout = (n: number) => n % 4;
  height = (n: number) => Math.floor(n / this.perBlock);
  satoshis = (n: number) => 1000 + (mix(n ^ this.seeds.sats) % 100_000);
  coinbase = (n: number) => n % this.perBlock === 0;
  /** P2WPKH: OP_0, push 20, the program. */
  script(a: number): Buffer {
    return Buffer.concat([Buffer.from([0, 20]), this.program(a)]);
  }

  hash(h: number): string {
    if (h < 0) return '00'.repeat(32);
    const b = Buffer.allocUnsafe(32);
    for (let k = 0; k < 8; k++) b.writeUInt32BE(mix((h * 8 + k) ^ this.seeds.block), k * 4);
    return b.toString('hex');
  }

  utxo(n: number): Utxo {
    const a = this.addressIndex(n);
    return {
      txid: this.txid(n).toString('hex'),
      vout: this.vout(n),
      address: a < 0 ? this.big : this.typical(a),
      height: this.height(n),
      satoshis: this.satoshis(n),
      scriptPubKey: this.script(a).toString('hex'),
      coinbase: this.coinbase(n),
    };
  }

  block(h: number): ParsedBlock {
    const outputs: Utxo[] = [];
    for (let n = h * this.perBlock; n < Math.min((h + 1) * this.perBlock, this.outputs); n++) outputs.push(this.utxo(n));
    return { height: h, hash: this.hash(h), prev: this.hash(h - 1), outputs, spends: [], txCount: outputs.length };
  }

  /** The undo record `applyBlocks` keeps for block h (no spends: its outputs and entries, in block order). */
  undo(h: number): BlockUndo {
    const b = this.block(h);
    return {
      height: h,
      hash: b.hash,
      prev: b.prev,
      outputs: b.outputs.map((o) => ({ txid: o.txid, vout: o.vout })),
      txs: b.outputs.map((o) => ({ address: o.address, txid: o.txid })),
      spent: [],
    };
  }

  tip() {
    return { height: this.blocks - 1, hash: this.hash(this.blocks - 1) };
  }

  /** What the index must answer for the outputs `ns` of one address: balance, unspent outputs and transactions in the store's order. */
  expected(ns: number[]): { balance: bigint; utxos: Utxo[]; transactions: TxRef[] } {
    const utxos = ns.map((n) => this.utxo(n));
    utxos.sort((x, y) => x.height - y.height || (x.txid < y.txid ? -1 : x.txid > y.txid ? 1 : x.vout - y.vout));
    const transactions = utxos.map((u) => ({ txid: u.txid, height: u.height }));
    transactions.sort((x, y) => y.height - x.height || (x.txid < y.txid ? -1 : x.txid > y.txid ? 1 : 0));
    return { balance: utxos.reduce((s, u) => s + BigInt(u.satoshis), 0n), utxos, transactions };
  }
}

const s1 = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
type Log = (line: string) => void;

/** Through the store's own write path: runs of 32 blocks, as a catching-up node writes them. */
export async function buildThroughApplyBlocks(store: ExplorerStore, syn: Synthetic, log: Log = () => {}): Promise<void> {
  await store.open();
  const t0 = performance.now();
  let next = 10;
  for (let h = 0; h < syn.blocks; h += 32) {
    const run: ParsedBlock[] = [];
    for (let k = h; k < Math.min(h + 32, syn.blocks); k++) run.push(syn.block(k));
    await store.applyBlocks(run);
    const done = (Math.min(h + 32, syn.blocks) / syn.blocks) * 100;
    if (done >= next) {
      log(`  ${done.toFixed(0)}% after ${s1(performance.now() - t0)}`);
      next += 10;
    }
  }
}

/** Journal records of the last `undoDepth` blocks, oldest first: what `applyBlocks` leaves after pruning. */
function keptUndo(syn: Synthetic, undoDepth: number): BlockUndo[] {
  const out: BlockUndo[] = [];
  for (let h = Math.max(0, syn.blocks - undoDepth); h < syn.blocks; h++) out.push(syn.undo(h));
  return out;
}

/** Runs one step of a bulk load and logs its time. */
function phase<T>(log: Log, name: string, fn: () => T): T {
  const t = performance.now();
  const out = fn();
  log(`  ${name}: ${s1(performance.now() - t)}`);
  return out;
}
async function phaseAsync<T>(log: Log, name: string, fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const out = await fn();
  log(`  ${name}: ${s1(performance.now() - t)}`);
  return out;
}

export interface BulkOptions {
  undoDepth: number;
  /** SQLite: page cache of the loading connection, MB (the sorts spill to temporary files beyond it). */
  cacheMb?: number;
  log?: Log;
}

/** Bulk-load the synthetic index into a new SQLite file (see the file comment). */
export async function bulkSqlite(file: string, syn: Synthetic, opts: BulkOptions): Promise<void> {
  const log = opts.log ?? (() => {});
  // The store makes the file: page size, WAL mode, tables, keys, indexes and schema version as a node does.
  const store = new SqliteExplorerStore(file, { undoDepth: opts.undoDepth });
  await store.open();
  await store.close();
  const stage = `${file}.stage`;
  fs.rmSync(stage, { force: true });
  const db = new Database(file);
  try {
    const indexes = db.prepare(`SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL`).all() as { name: string; sql: string }[];
    for (const i of indexes) db.exec(`DROP INDEX "${i.name}"`);
    // No rollback journal for the load (a failed build is thrown away); WAL again at the end, as the store keeps it.
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma(`cache_size = -${(opts.cacheMb ?? 256) * 1024}`);
    // The sorts of 10M rows go to temporary files, not memory.
    db.pragma('temp_store = FILE');
    db.exec(`ATTACH '${stage}' AS stage`);
    db.pragma('stage.journal_mode = OFF');
    db.pragma('stage.synchronous = OFF');
    db.exec(`CREATE TABLE stage.out (txid BLOB NOT NULL, vout INTEGER NOT NULL, address TEXT NOT NULL, height INTEGER NOT NULL,
      satoshis INTEGER NOT NULL, script BLOB NOT NULL, coinbase INTEGER NOT NULL)`);
    const put = db.prepare(`INSERT INTO stage.out VALUES (?, ?, ?, ?, ?, ?, ?)`);
    const scripts = new Map<number, Buffer>();
    const txid = Buffer.allocUnsafe(32);
    const chunk = db.transaction((from: number, to: number) => {
      for (let n = from; n < to; n++) {
        const a = syn.addressIndex(n);
        let script = scripts.get(a);
        if (!script) {
          script = syn.script(a);
          if (scripts.size < 2_000_000) scripts.set(a, script);
        }
        put.run(syn.txid(n, txid), syn.vout(n), a < 0 ? syn.big : syn.typical(a), syn.height(n), syn.satoshis(n), script, syn.coinbase(n) ? 1 : 0);
      }
    });
    phase(log, 'outputs appended to the staging table', () => {
      for (let n = 0; n < syn.outputs; n += 100_000) chunk(n, Math.min(n + 100_000, syn.outputs));
    });
    scripts.clear();
    phase(log, 'utxo, sorted by (txid, vout)', () => db.exec(`INSERT INTO utxo SELECT * FROM stage.out ORDER BY txid, vout`));
    // One transaction entry per output (each output is its own transaction's only one paying an address).
    phase(log, 'tx, sorted by (address, -height, txid)', () => db.exec(`INSERT INTO tx SELECT address, -height, txid FROM stage.out ORDER BY 1, 2, 3`));
    phase(log, 'balance, one GROUP BY', () => db.exec(`INSERT INTO balance SELECT address, sum(satoshis) FROM stage.out GROUP BY address ORDER BY address`));
    db.exec('DETACH stage');
    fs.rmSync(stage, { force: true });
    const putJournal = db.prepare(`INSERT INTO journal VALUES (?, ?, ?, ?)`);
    db.transaction(() => {
      for (const u of keptUndo(syn, opts.undoDepth)) putJournal.run(u.height, u.hash, u.prev, packUndo(u));
      db.prepare(`INSERT INTO meta VALUES ('tip', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`).run(JSON.stringify(syn.tip()));
    })();
    for (const i of indexes) phase(log, `index ${i.name}`, () => db.exec(i.sql));
    db.pragma('journal_mode = WAL');
  } finally {
    db.close();
    fs.rmSync(stage, { force: true });
  }
}

const BULK_TABLES = ['explorer_utxo', 'explorer_tx', 'explorer_balance'];

/** COPY rows into `table` through psql (node-postgres has no COPY without another package). */
async function copyIn(url: string, psql: string, table: string, write: (push: (line: string) => boolean | Promise<void>) => Promise<void>): Promise<void> {
  const child = spawn(psql, [url, '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-c', `COPY ${table} FROM STDIN`], { stdio: ['pipe', 'inherit', 'inherit'] });
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`psql COPY ${table} exited with ${code}`))));
  });
  const stdin = child.stdin!;
  let buffered: string[] = [];
  let size = 0;
  const flush = async () => {
    if (!buffered.length) return;
    const ok = stdin.write(buffered.join(''));
    buffered = [];
    size = 0;
    if (!ok) await new Promise((r) => stdin.once('drain', r));
  };
  await write((line) => {
    buffered.push(line);
    size += line.length;
    return size > 1 << 20 ? flush() : true;
  });
  await flush();
  stdin.end();
  await done;
}

/** Bulk-load the synthetic index into an empty PostgreSQL database (see the file comment). `psql`: its path. */
export async function bulkPostgres(url: string, syn: Synthetic, opts: BulkOptions & { psql: string }): Promise<void> {
  const log = opts.log ?? (() => {});
  const store = new PgExplorerStore({ url, undoDepth: opts.undoDepth });
  await store.open();
  await store.close();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    // The keys and indexes as the store made them, dropped for the load and made again after it from their own definitions.
    const tables = BULK_TABLES.map((t) => `'${t}'`).join(', ');
    const keys = (
      await c.query<{ t: string; name: string; def: string }>(
        `SELECT conrelid::regclass::text AS t, conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid::regclass::text IN (${tables}) AND contype IN ('p', 'u')`,
      )
    ).rows;
    const indexes = (
      await c.query<{ name: string; def: string }>(
        `SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename IN (${tables}) AND indexname NOT IN (SELECT conname FROM pg_constraint)`,
      )
    ).rows;
    for (const i of indexes) await c.query(`DROP INDEX "${i.name}"`);
    for (const k of keys) await c.query(`ALTER TABLE ${k.t} DROP CONSTRAINT "${k.name}"`);
    await phaseAsync(log, 'outputs COPYed into explorer_utxo (block order)', () =>
      copyIn(url, opts.psql, 'explorer_utxo (txid, vout, address, height, satoshis, script, coinbase)', async (push) => {
        const txid = Buffer.allocUnsafe(32);
        const scripts = new Map<number, string>();
        for (let n = 0; n < syn.outputs; n++) {
          const a = syn.addressIndex(n);
          let script = scripts.get(a);
          if (!script) {
            script = syn.script(a).toString('hex');
            if (scripts.size < 2_000_000) scripts.set(a, script);
          }
          const p = push(`\\\\x${syn.txid(n, txid).toString('hex')}\t${syn.vout(n)}\t${a < 0 ? syn.big : syn.typical(a)}\t${syn.height(n)}\t${syn.satoshis(n)}\t\\\\x${script}\t${syn.coinbase(n) ? 't' : 'f'}\n`);
          if (p !== true) await p;
        }
      }),
    );
    // One transaction entry per output, in block order like the outputs.
    await phaseAsync(log, 'explorer_tx from the outputs', () => c.query(`INSERT INTO explorer_tx SELECT address, -height, txid FROM explorer_utxo`));
    await phaseAsync(log, 'explorer_balance, one GROUP BY', () => c.query(`INSERT INTO explorer_balance SELECT address, sum(satoshis) FROM explorer_utxo GROUP BY address`));
    const kept = keptUndo(syn, opts.undoDepth);
    await c.query(`INSERT INTO explorer_journal SELECT * FROM unnest($1::int[], $2::text[], $3::text[], $4::text[])`, [
      kept.map((u) => u.height),
      kept.map((u) => u.hash),
      kept.map((u) => u.prev),
      kept.map(packUndo),
    ]);
    await c.query(`INSERT INTO explorer_meta VALUES ('tip', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [JSON.stringify(syn.tip())]);
    await c.query(`SET maintenance_work_mem = '512MB'`);
    for (const k of keys) await phaseAsync(log, `key ${k.name}`, () => c.query(`ALTER TABLE ${k.t} ADD CONSTRAINT "${k.name}" ${k.def}`));
    for (const i of indexes) await phaseAsync(log, `index ${i.name}`, () => c.query(i.def));
    // Statistics for the planner, and the visibility map a long-running index gets from autovacuum (index-only scans).
    await phaseAsync(log, 'VACUUM ANALYZE', () => c.query(`VACUUM ANALYZE ${BULK_TABLES.join(', ')}, explorer_journal, explorer_meta`));
    await c.query('CHECKPOINT');
  } finally {
    await c.end();
  }
}

/**
 * Check a store against the generator: balance, unspent outputs and transactions of typical addresses
 * `sample` (indexes) and, when `big`, the big address. Throws at the first difference.
 */
export async function verifyStore(store: ExplorerStore, syn: Synthetic, sample: number[], big: boolean): Promise<void> {
  const check = async (address: string, ns: number[]) => {
    const want = syn.expected(ns);
    const [balance, utxos, transactions] = await Promise.all([store.balance(address), store.utxos(address), store.transactions(address)]);
    if (balance !== want.balance) throw new Error(`${address}: balance ${balance}, expected ${want.balance}`);
    if (JSON.stringify(utxos) !== JSON.stringify(want.utxos)) throw new Error(`${address}: unspent outputs differ from the generator's`);
    if (JSON.stringify(transactions) !== JSON.stringify(want.transactions)) throw new Error(`${address}: transactions differ from the generator's`);
  };
  // Several addresses at a time: PostgreSQL answers on several connections.
  for (let i = 0; i < sample.length; i += 16) await Promise.all(sample.slice(i, i + 16).map((a) => check(syn.typical(a), syn.outputsOf(a))));
  if (big) await check(syn.big, syn.bigOutputs());
}
