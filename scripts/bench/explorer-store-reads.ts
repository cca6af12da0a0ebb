/**
 * Where the time of an SQLite store read goes at scale: the store alone (no HTTP), on a synthetic index
 * (bulk-built when the file is missing; kept with --keep so variants can be run again), balance, utxos and
 * a page of 1,000 transactions of typical addresses, in passes over the same seeded addresses:
 *
 * - cold: the file's pages dropped from the OS page cache first (`dd iflag=nocache count=0`: this file only),
 *   then warm: the same addresses again;
 * - per variant of the connection: the page cache (`--cache-mb`, the store's `cacheMb`) and mmap_size
 *   (`--mmap-mb`; SQLite reads pages through read() by default, and each miss of its own cache is a copy).
 *
 * Besides wall p50/p99 it prints, per pass, the process's CPU time per query (wall far above CPU: the query
 * waited, for the disk or for a core), block reads from the disk (getrusage inblock) and the page cache's
 * hold on the file (fincore), and the p99 of an empty loop step in the same pass (the machine's own noise).
 *
 *   npx tsx scripts/bench/explorer-store-reads.ts --file $TMPDIR/x10m-idx.sqlite --outputs 10000000 [--keep]
 *       [--cache-mb 64,256] [--mmap-mb 0,4096] [--queries 2000]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import Database from 'better-sqlite3';
import { SqliteExplorerStore } from '../../plugins/explorer/sqlite-store.ts';
import { Synthetic, bulkSqlite } from './explorer-synthetic.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const FILE = arg('file', `${os.tmpdir()}/x10m-idx.sqlite`);
const OUTPUTS = Number(arg('outputs', '10000000'));
const QUERIES = Number(arg('queries', '2000'));
const CACHES = arg('cache-mb', '64').split(',').map(Number);
const MMAPS = arg('mmap-mb', '0').split(',').map(Number);
const KEEP = process.argv.includes('--keep');

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)} / p99 ${pct(xs, 99).toFixed(2)} ms`;
const load = () => os.loadavg()[0].toFixed(1);

function evict() {
  for (const file of [FILE, `${FILE}-wal`]) if (fs.existsSync(file)) execFileSync('dd', [`if=${file}`, 'iflag=nocache', 'count=0', 'status=none']);
}
function cached(): string {
  const out = execFileSync('fincore', ['--bytes', '--noheadings', '--output', 'RES,SIZE', FILE], { encoding: 'utf8' }).trim().split(/\s+/).map(Number);
  return `${((out[0] / out[1]) * 100).toFixed(0)}% of the file in the page cache`;
}

async function pass(store: SqliteExplorerStore, syn: Synthetic, label: string) {
  let x = 12345;
  const next = () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % syn.typicalCount;
  };
  const wall = { balance: [] as number[], utxos: [] as number[], txs: [] as number[], empty: [] as number[] };
  const cpu: number[] = [];
  const before = process.resourceUsage();
  const before2 = cached();
  for (let q = 0; q < QUERIES; q++) {
    const a = syn.typical(next());
    let t = performance.now();
    await null;
    wall.empty.push(performance.now() - t);
    t = performance.now();
    await store.balance(a);
    wall.balance.push(performance.now() - t);
    const c = process.cpuUsage();
    t = performance.now();
    await store.utxos(a, { limit: 1001 });
    wall.utxos.push(performance.now() - t);
    const cu = process.cpuUsage(c);
    cpu.push((cu.user + cu.system) / 1000);
    t = performance.now();
    await store.transactions(a, { limit: 1000 });
    wall.txs.push(performance.now() - t);
  }
  const after = process.resourceUsage();
  console.log(
    `  ${label.padEnd(5)}: balance ${f(wall.balance)}; utxos ${f(wall.utxos)} (CPU ${f(cpu)}); transactions ${f(wall.txs)}; empty step p99 ${pct(wall.empty, 99).toFixed(2)} ms; ` +
      `${after.fsRead - before.fsRead} block reads; before: ${before2}, after: ${cached()} (load ${load()})`,
  );
}

async function main() {
  const syn = new Synthetic({ outputs: OUTPUTS, big: 1_000_000 });
  if (!fs.existsSync(FILE)) {
    const t = performance.now();
    await bulkSqlite(FILE, syn, { undoDepth: 1000, log: console.log });
    console.log(`built ${FILE} in ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }
  try {
    for (const cacheMb of CACHES)
      for (const mmapMb of MMAPS) {
        console.log(`cacheMb ${cacheMb}, mmap_size ${mmapMb} MB, ${QUERIES} typical addresses:`);
        evict();
        const store = new SqliteExplorerStore(FILE, { undoDepth: 1000, cacheMb });
        await store.open();
        // The store's connection, reached for this measurement only: mmap_size is not one of its options.
        (store as unknown as { db: Database.Database }).db.pragma(`mmap_size = ${mmapMb * 2 ** 20}`);
        await pass(store, syn, 'cold');
        await pass(store, syn, 'warm');
        await store.close();
      }
  } finally {
    if (!KEEP) for (const f of [FILE, `${FILE}-wal`, `${FILE}-shm`]) fs.rmSync(f, { force: true });
  }
}

await main();
