/**
 * The benchmark's bulk builder of a synthetic index (scripts/bench/explorer-synthetic.ts) writes what the
 * store's own `applyBlocks` writes: on each store, 20,000 outputs built both ways give the same rows in
 * every table (journal and tip included) and the same indexes, and the store answers every address as the
 * generator says (balance, unspent outputs, transactions).
 */
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Synthetic, buildThroughApplyBlocks, bulkPostgres, bulkSqlite, verifyStore } from '../../scripts/bench/explorer-synthetic.ts';
import { pgBin } from './postgres.ts';
import { prepareIndex, storeKinds, type StoreKind } from './stores.ts';

const TABLES: [string, string][] = [
  ['utxo', 'txid, vout'],
  ['tx', 'address, nheight, txid'],
  ['balance', 'address'],
  ['journal', 'height'],
  ['meta', 'key'],
];

/** Every row of every table, in key order, and the index definitions. */
async function dump(kind: StoreKind, name: string): Promise<Record<string, unknown[]>> {
  const cfg = kind.nodeConfig(name) as { path?: string; url?: string };
  const out: Record<string, unknown[]> = {};
  if (kind.name === 'sqlite') {
    const db = new Database(cfg.path!, { readonly: true });
    try {
      for (const [t, key] of TABLES) out[t] = db.prepare(`SELECT * FROM ${t} ORDER BY ${key}`).all();
      out.schema = db.prepare(`SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name`).all();
      out.pragmas = ['page_size', 'journal_mode'].map((p) => db.pragma(p, { simple: true }));
    } finally {
      db.close();
    }
    return out;
  }
  const c = new pg.Client({ connectionString: cfg.url });
  await c.connect();
  try {
    for (const [t, key] of TABLES) out[t] = (await c.query(`SELECT * FROM explorer_${t} ORDER BY ${key}`)).rows;
    out.schema = (await c.query(`SELECT tablename, indexname, indexdef FROM pg_indexes WHERE tablename LIKE 'explorer_%' ORDER BY indexname`)).rows;
  } finally {
    await c.end();
  }
  return out;
}

for (const kind of storeKinds()) {
  describe(`explorer synthetic index, bulk build against applyBlocks (${kind.name})`, function () {
    this.timeout(120_000);
    before(() => kind.setup());
    after(() => kind.teardown());

    it('gives the same tables and the generator’s answers for every address', async () => {
      // 200 blocks of 100 outputs, undo records of the last 50 kept: pruning and the journal are exercised.
      const syn = new Synthetic({ outputs: 20_000, big: 2_000, perBlock: 100, seed: 7 });
      const undoDepth = 50;
      const applied = await kind.make('applied', { undoDepth });
      await buildThroughApplyBlocks(applied, syn);
      await applied.close();

      await prepareIndex(kind, 'bulk');
      const cfg = kind.nodeConfig('bulk') as { path?: string; url?: string };
      if (kind.name === 'sqlite') await bulkSqlite(cfg.path!, syn, { undoDepth });
      else await bulkPostgres(cfg.url!, syn, { undoDepth, psql: pgBin('psql') });

      const [a, b] = [await dump(kind, 'applied'), await dump(kind, 'bulk')];
      for (const t of Object.keys(a)) assert.deepEqual(b[t], a[t], `table ${t}`);
      assert.equal(a.utxo.length, 20_000);
      assert.equal(a.journal.length, undoDepth);

      const bulk = await kind.make('bulk', { undoDepth });
      assert.deepEqual(await bulk.open(), syn.tip());
      assert.equal(bulk.lowestUndoTarget(), syn.blocks - 1 - undoDepth);
      await verifyStore(bulk, syn, Array.from({ length: syn.typicalCount }, (_, i) => i), true);
    });
  });
}
