/**
 * Where a PostgreSQL run's time goes: synthetic regtest-sized blocks (20 outputs, 8 spends of outputs of
 * earlier runs) written through the store's own `applyBlocks` in runs of 32, each statement timed from the
 * client (the round trip: sending, the server's work, the answer), against the CPU time of this process.
 *
 * `--catchup`: runs are handed over as the scanner does while catching up (up to the store's `rowsAhead`
 * rows in flight, so the runs queued behind a transaction are written as one, with the chain's height
 * passed: blocks the chain is `undoDepth` past get no undo record), repeated `--rounds` times into fresh
 * databases; CPU a block of this process and of the server. A store-side figure without litecoind's noise.
 *
 *   npx tsx scripts/bench/explorer-pg-runs.ts [--blocks 2000] [--store sqlite] [--catchup --rounds 3]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { PgExplorerStore } from '../../plugins/explorer/pg-store.ts';
import { SqliteExplorerStore } from '../../plugins/explorer/sqlite-store.ts';
import { regtestSizedBlocks } from './explorer-blocks.ts';
import { startPostgres } from '../../test/explorer/postgres.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const BLOCKS = Number(arg('blocks', '2000'));
/** `--store sqlite`: the same runs into the embedded store (its writes are this process's CPU). */
const STORE = arg('store', 'postgres');
const CATCHUP = process.argv.includes('--catchup');
const ROUNDS = Number(arg('rounds', '3'));

const spent: Record<string, { n: number; ms: number }> = {};
const query = pg.Client.prototype.query as (...a: unknown[]) => Promise<unknown>;
(pg.Client.prototype as unknown as { query: unknown }).query = function (this: pg.Client, ...a: unknown[]) {
  const text = typeof a[0] === 'string' ? a[0] : ((a[0] as { text?: string })?.text ?? '');
  const key = text.replace(/\s+/g, ' ').trim().slice(0, 40);
  const t = performance.now();
  const p = query.apply(this, a);
  if (p && typeof (p as Promise<unknown>).then === 'function')
    (p as Promise<unknown>).then(
      () => {
        const s = (spent[key] ??= { n: 0, ms: 0 });
        s.n++;
        s.ms += performance.now() - t;
      },
      () => {},
    );
  return p;
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'explorer-runs-'));
const server = STORE === 'postgres' ? await startPostgres({ durable: true, settings: ['-c shared_buffers=256MB', '-c max_wal_size=8GB'] }) : null;
try {
  await server?.createDatabase('runs');
  const store = server ? new PgExplorerStore({ url: server.url('runs'), undoDepth: 1000 }) : new SqliteExplorerStore(path.join(dir, 'index.sqlite'), { undoDepth: 1000 });
  await store.open();
  const blocks = regtestSizedBlocks(BLOCKS);
  // The server's CPU time (every process of the cluster: backends, WAL writer, checkpointer) does not depend
  // on how busy the machine is, unlike the wall time.
  const admin = server ? new pg.Client({ connectionString: server.url('runs') }) : null;
  await admin?.connect();
  const tick = 100;
  const serverCpu = async () => {
    if (!admin) return 0;
    const pids = (await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity')).rows.map((r) => r.pid);
    let t = 0;
    for (const pid of pids) {
      try {
        const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        t += Number(f[11]) + Number(f[12]);
      } catch {}
    }
    return (t * 1000) / tick;
  };
  if (CATCHUP) {
    for (let round = 0; round < ROUNDS; round++) {
      const db = `catchup${round}`;
      await server?.createDatabase(db);
      const st = server ? new PgExplorerStore({ url: server.url(db), undoDepth: 1000 }) : new SqliteExplorerStore(path.join(dir, `catchup${round}.sqlite`), { undoDepth: 1000 });
      await st.open();
      const rowsAhead = st.rowsAhead ?? 0;
      const cpu = process.cpuUsage();
      const s0 = await serverCpu();
      const t0 = performance.now();
      const inFlight: { done: Promise<void>; rows: number }[] = [];
      let rows = 0;
      for (let k = 0; k < BLOCKS; k += 32) {
        const run = blocks.slice(k, k + 32);
        const n = run.reduce((a, b) => a + b.outputs.length + b.spends.length, 0);
        while (inFlight.length && rows + n > rowsAhead) {
          const w = inFlight.shift()!;
          rows -= w.rows;
          await w.done;
        }
        inFlight.push({ done: st.applyBlocks(run, BLOCKS - 1), rows: n });
        rows += n;
      }
      for (const w of inFlight) await w.done;
      const ms = performance.now() - t0;
      const c = process.cpuUsage(cpu);
      // The server's CPU: every backend that lived through the round (the pool's and this admin connection).
      console.log(`round ${round + 1}: ${BLOCKS} blocks in ${ms.toFixed(0)} ms; CPU a block: this process ${((c.user + c.system) / 1000 / BLOCKS).toFixed(3)} ms, the server ${(((await serverCpu()) - s0) / BLOCKS).toFixed(3)} ms`);
      await st.close();
    }
  } else {
    const cpu = process.cpuUsage();
    const s0 = await serverCpu();
    const t0 = performance.now();
    for (let k = 0; k < BLOCKS; k += 32) await store.applyBlocks(blocks.slice(k, k + 32));
    const ms = performance.now() - t0;
    const c = process.cpuUsage(cpu);
    const runs = Math.ceil(BLOCKS / 32);
    console.log(
      `${BLOCKS} blocks in ${runs} runs: ${ms.toFixed(0)} ms (${(ms / runs).toFixed(1)} ms a run); CPU a run: this process ${((c.user + c.system) / 1000 / runs).toFixed(1)} ms, the server ${(((await serverCpu()) - s0) / runs).toFixed(1)} ms`,
    );
  }
  await admin?.end();
  for (const [k, v] of Object.entries(spent).sort((a, b) => b[1].ms - a[1].ms)) console.log(`  ${v.ms.toFixed(0).padStart(6)} ms  ${String(v.n).padStart(5)} x  ${(v.ms / v.n).toFixed(2)} ms  ${k}`);
  if (server && process.argv.includes('--explain')) {
    const c = new pg.Client({ connectionString: server.url('runs') });
    await c.connect();
    const keys = blocks.slice(100, 132).flatMap((b) => b.outputs.slice(0, 8));
    const r = await c.query(`EXPLAIN ANALYZE SELECT u.* FROM explorer_utxo u JOIN unnest($1::bytea[], $2::int[]) AS d(txid, vout) ON u.txid = d.txid AND u.vout = d.vout`, [
      keys.map((k) => Buffer.from(k.txid, 'hex')),
      keys.map((k) => k.vout),
    ]);
    console.log(r.rows.map((x) => x['QUERY PLAN']).join('\n'));
    await c.end();
  }
  await store.close();
} finally {
  await server?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
