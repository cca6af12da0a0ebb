/**
 * The write side of the SQLite index: one connection that plans and writes runs of blocks and undoes the
 * tip, synchronously. It runs on the writer thread (`sqlite-writer-thread.ts`), so its CPU (about 60% of it
 * in the commit, measured) is spent beside the node's thread, which meanwhile fetches and parses the next
 * blocks, as PostgreSQL's server does for the PostgreSQL store.
 *
 * A transaction is a run of whole blocks: journal records, spent outputs removed, new outputs and entries
 * inserted, balances moved, the tip moved, old journal records pruned. A kill at any point leaves either
 * none or all of it. Spends are looked up on this connection, so a plan sees every earlier run, committed
 * or not yet.
 */
import type Database from 'better-sqlite3';
import { journalFloor, type Head } from './kept-blocks.ts';
import { addBalances, assertExtends, hex, packUndo, planRunSync, unpackUndo, type BlockUndo, type OutPoint, type TxEntry } from './plan.ts';
import { RowInserter } from './sqlite-rows.ts';
import { connect, readHeads, toUtxo, type Row } from './sqlite-db.ts';
import { IndexInconsistentError, faultHook, type Fault, type ParsedBlock, type Tip, type Utxo } from './store.ts';

export interface WriterOptions {
  undoDepth: number;
  cacheMb: number;
  fault?: Fault;
}

const byTxid = (x: { txid: string }, y: { txid: string }) => (x.txid < y.txid ? -1 : x.txid > y.txid ? 1 : 0);
const byAddress = (x: { address: string }, y: { address: string }) => (x.address < y.address ? -1 : x.address > y.address ? 1 : 0);

export class SqliteWriter {
  private readonly db: Database.Database;
  private readonly st: ReturnType<typeof prepare>;
  private readonly fault: ReturnType<typeof faultHook>;
  private current: Tip | null;

  constructor(
    file: string,
    private readonly opts: WriterOptions,
  ) {
    // The store created the file and its tables before starting this writer.
    this.db = connect(file, opts.cacheMb);
    // Checkpoint the log every 200 MB rather than SQLite's 4 MB: fewer fsyncs of the main file while catching
    // up (7,400 against 5,600 outputs/s with 4,000-row transactions at 40 MB), and a page rewritten by
    // several runs is copied into the file once (the writer's CPU a regtest-sized block 0.31 -> 0.29 ms
    // against 40 MB, runs of 700 blocks).
    this.db.pragma('wal_autocheckpoint = 50000');
    // A long catch-up grows the log to its largest transaction; give the disk back after each checkpoint.
    this.db.pragma(`journal_size_limit = ${64 * 2 ** 20}`);
    this.st = prepare(this.db);
    this.fault = faultHook(opts.fault);
    this.current = readHeads(this.db).tip;
  }

  tip(): Tip | null {
    return this.current;
  }

  /**
   * Plan and write `blocks` (whole blocks, on top of the tip) as one transaction; returns their heads and the
   * height at and below which no journal record is kept (journalFloor). The lookup runs on this connection
   * inside the transaction: the plan sees every earlier run.
   */
  applyRun(blocks: ParsedBlock[], chainHeight?: number): { heads: Head[]; floor: number } {
    assertExtends(this.current, blocks);
    const st = this.st;
    const fault = this.fault;
    const lookup = (keys: OutPoint[]) => {
      const out: Utxo[] = [];
      for (const k of keys) {
        const r = st.getOutput.get(hex(k.txid), k.vout) as Row | undefined;
        if (r) out.push(toUtxo(r));
      }
      return out;
    };
    const last = blocks.at(-1)!;
    const floor = journalFloor(this.opts.undoDepth, last.height, chainHeight);
    const write = this.db.transaction(() => {
      const plan = planRunSync(blocks, lookup);
      // Rows go in key order of the table they land in: each B-tree is walked once from left to right, so a
      // page is dirtied, written and left behind rather than visited again at random (outputs by txid,
      // entries and balances by address; the outputs' by-address index still gets them at random).
      plan.removed.sort(byTxid);
      plan.created.sort(byTxid);
      plan.txs.sort(byAddress);
      const balances = [...plan.balances].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
      st.putJournals.insert(plan.undo.filter((u) => u.height > floor));
      fault('journal');
      for (const u of plan.removed) st.delOutput.run(hex(u.txid), u.vout);
      fault('spent');
      st.putOutputs.insert(plan.created);
      st.putTxs.insert(plan.txs);
      for (const [a, d] of balances) st.addBalance.run(a, d);
      fault('added');
      st.setTip.run(JSON.stringify({ height: last.height, hash: last.hash }));
      fault('tip');
      st.prune.run(floor);
    });
    write();
    this.current = { height: last.height, hash: last.hash };
    return { heads: blocks.map((b) => ({ height: b.height, hash: b.hash, prev: b.prev })), floor };
  }

  /** Undo the tip block (which must be `height`) exactly; returns its head. */
  undoTip(height: number): Head {
    const st = this.st;
    if (this.current?.height !== height) throw new Error(`the index's tip is ${this.current?.height ?? 'none'}, not ${height}`);
    const r = st.journal.get(height) as { height: number; hash: string; prev: string; undo: string } | undefined;
    if (!r) throw new IndexInconsistentError(`explorer index: journal record of block ${height} is missing`);
    const j = unpackUndo(r.height, r.hash, r.prev, r.undo);
    this.db.transaction(() => {
      this.fault('undo-marked');
      this.revert(j);
      this.fault('reverted');
      st.setTip.run(JSON.stringify({ height: j.height - 1, hash: j.prev }));
      st.delJournal.run(j.height);
    })();
    this.current = { height: j.height - 1, hash: j.prev };
    return { height: j.height, hash: j.hash, prev: j.prev };
  }

  /** Take a block back: remove what it added, put back what it spent, and move the balances back. */
  private revert(j: BlockUndo): void {
    const st = this.st;
    const gone: { address: string; satoshis: number }[] = [];
    for (const o of j.outputs) {
      const r = st.takeOutput.get(hex(o.txid), o.vout) as { address: string; satoshis: number } | undefined;
      if (r) gone.push(r);
    }
    for (const t of j.txs) st.delTx.run(t.address, -j.height, hex(t.txid));
    st.putOutputs.insert(j.spent);
    for (const [a, d] of addBalances(addBalances(new Map(), j.spent, 1), gone, -1)) if (d !== 0n) st.addBalance.run(a, d);
  }

  close(): void {
    this.db.close();
  }
}

function prepare(db: Database.Database) {
  return {
    setTip: db.prepare(`INSERT INTO meta VALUES ('tip', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`),
    journal: db.prepare(`SELECT height, hash, prev, undo FROM journal WHERE height = ?`),
    delJournal: db.prepare(`DELETE FROM journal WHERE height = ?`),
    prune: db.prepare(`DELETE FROM journal WHERE height <= ?`),
    getOutput: db.prepare(`SELECT * FROM utxo WHERE txid = ? AND vout = ?`),
    putOutputs: new RowInserter<Utxo>(db, 'INSERT OR REPLACE INTO utxo', '(?, ?, ?, ?, ?, ?, ?)', (a, o) =>
      a.push(hex(o.txid), o.vout, o.address, o.height, o.satoshis, hex(o.scriptPubKey), o.coinbase ? 1 : 0),
    ),
    putTxs: new RowInserter<TxEntry>(db, 'INSERT OR IGNORE INTO tx', '(?, ?, ?)', (a, t) => a.push(t.address, -t.height, hex(t.txid))),
    putJournals: new RowInserter<BlockUndo>(db, 'INSERT OR REPLACE INTO journal', '(?, ?, ?, ?)', (a, u) => a.push(u.height, u.hash, u.prev, packUndo(u))),
    delOutput: db.prepare(`DELETE FROM utxo WHERE txid = ? AND vout = ?`),
    takeOutput: db.prepare(`DELETE FROM utxo WHERE txid = ? AND vout = ? RETURNING address, satoshis`),
    addBalance: db.prepare(`INSERT INTO balance VALUES (?, ?) ON CONFLICT (address) DO UPDATE SET satoshis = satoshis + excluded.satoshis`),
    delTx: db.prepare(`DELETE FROM tx WHERE address = ? AND nheight = ? AND txid = ?`),
  };
}
