/**
 * What indexing adds to fetching, in this process's CPU alone: the benchmark chain's `getblock` answers are
 * recorded once from a real litecoind, then served again from memory by a client double (each answer
 * JSON-parsed per call, as the RPC client does), so litecoind's CPU and the HTTP work are out of the figure.
 * `npm run bench:explorer` gives the ratio on the whole machine; on 2 cores it moves by ±0.05 from run to run
 * with litecoind's CPU a block, too much to tell a change of 0.02 ms a block. Here the same work repeats
 * within a few percent.
 *
 * Rounds alternate a fetch (BlockFetcher, as the benchmark's baseline) and an index (the Scanner into a fresh
 * store of each kind holding blocks 0..WARMUP). Per block: CPU of the main thread (its GC pauses apart), of
 * the other threads (SQLite's writer, V8's helpers), and of PostgreSQL's server.
 *
 *   npm run bench:explorer-replay [-- --blocks 5000 --rounds 5 --stores sqlite,postgres --record FILE | --chain FILE]
 *
 * The chain is built and recorded first (about a minute), into $TMPDIR/explorer-replay-* (removed at the
 * end) or into `--record FILE` (kept); `--chain FILE` replays such a recording without building.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks';
import type { RpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { parseBlock, type RpcBlock } from '../../plugins/explorer/block.ts';
import { BlockFetcher } from '../../plugins/explorer/fetch.ts';
import { PgExplorerStore } from '../../plugins/explorer/pg-store.ts';
import { Scanner } from '../../plugins/explorer/scanner.ts';
import { SqliteExplorerStore } from '../../plugins/explorer/sqlite-store.ts';
import type { ExplorerStore, ParsedBlock } from '../../plugins/explorer/store.ts';
import { startLitecoind } from '../../test/support/litecoind.ts';
import { startPostgres, type Postgres } from '../../test/explorer/postgres.ts';
import { buildChain } from './explorer-chain.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const RECORD = arg('record', '');
const CHAIN = arg('chain', '');
const BLOCKS = Number(arg('blocks', '5000'));
const ROUNDS = Number(arg('rounds', '5'));
const WARMUP = Number(arg('warmup', '1000'));
const PREFETCH = Number(arg('prefetch', '32'));
type Kind = 'sqlite' | 'postgres';
/** More server settings (`-c name=value`, comma-separated), for experiments. */
const PG_SETTINGS = arg('pg-settings', '').split(',').filter(Boolean).map((x) => `-c ${x}`);
const STORES = arg('stores', 'sqlite,postgres').split(',') as Kind[];

/** Record the benchmark chain's answers (one JSON text a block, by height) into `file`. */
async function record(file: string): Promise<void> {
  const ltc = await startLitecoind();
  try {
    await buildChain(ltc, BLOCKS);
    const height = await ltc.rpc.call<number>('getblockcount');
    const lines: string[] = [];
    for (let h = 0; h <= height; h++) lines.push(JSON.stringify(await ltc.rpc.call('getblock', [await ltc.rpc.call<string>('getblockhash', [h]), 2])));
    fs.writeFileSync(file, lines.join('\n') + '\n');
    console.log(`recorded ${lines.length} blocks to ${file}`);
  } finally {
    await ltc.stop();
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'explorer-replay-'));
// Without --chain, a recording of this run (kept with --record FILE).
const chain = CHAIN || RECORD || path.join(dir, 'chain.jsonl');
if (!CHAIN)
  await record(chain).catch((e) => {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  });

const texts = fs.readFileSync(chain, 'utf8').trimEnd().split('\n');
const hashes = texts.map((t) => (JSON.parse(t) as RpcBlock).hash);
const byHash = new Map(hashes.map((h, i) => [h, i]));
const height = texts.length - 1;

/** A client double: the recorded answers, parsed per call, answered on a later turn (as from a socket). */
const later = <T>(f: () => T) =>
  new Promise<T>((resolve, reject) =>
    setImmediate(() => {
      try {
        resolve(f());
      } catch (e) {
        reject(e);
      }
    }),
  );
const recorded: RpcClient = {
  inFlight: 0,
  options: { url: 'http://recorded' },
  call: <T>(method: string, params: unknown[] = []) =>
    later(() => {
      if (method === 'getblockcount') return height as T;
      if (method === 'getblockhash') return hashes[params[0] as number] as T;
      if (method === 'getblock') return JSON.parse(texts[byHash.get(params[0] as string)!]) as T;
      throw new Error(`recorded client: ${method}`);
    }),
  batch: (calls) => later(() => calls.map((c) => hashes[(c.params as number[])[0]])),
} as RpcClient;

const TICK = 100; // USER_HZ
const stat = (file: string) => {
  const f = fs.readFileSync(file, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICK;
};
const children = (pid: number) => {
  let ms = stat(`/proc/${pid}/stat`);
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const f = fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(f[1]) === pid) ms += ((Number(f[11]) + Number(f[12])) * 1000) / TICK;
    } catch {}
  }
  return ms;
};
const gc = { ms: 0 };
new PerformanceObserver((l) => {
  for (const e of l.getEntries()) gc.ms += e.duration;
}).observe({ entryTypes: ['gc'] });
let pg: Postgres | null = null;
/** CPU ms of each thread of this process by id (all are named "node"), the main thread apart. */
const byName = () => {
  const m = new Map<string, number>();
  for (const t of fs.readdirSync('/proc/self/task')) {
    if (Number(t) === process.pid) continue;
    try {
      m.set(t, stat(`/proc/self/task/${t}/stat`));
    } catch {}
  }
  return m;
};
const cpu = () => {
  const c = process.cpuUsage();
  return { threads: byName(), main: stat(`/proc/self/task/${process.pid}/stat`), all: (c.user + c.system) / 1000, gc: gc.ms, pg: pg ? children(pg.pid()!) : 0, t: performance.now() };
};
type Cpu = ReturnType<typeof cpu>;
const blocks = height - WARMUP;
const per = (a: Cpu, b: Cpu) => ({
  threads: [...b.threads]
    .map(([k, v]) => (v - (a.threads.get(k) ?? 0)) / blocks)
    .sort((x, y) => y - x)
    .slice(0, 4)
    .map((x) => x.toFixed(3))
    .join(', '), main: (b.main - a.main) / blocks, gc: (b.gc - a.gc) / blocks, others: (b.all - a.all - (b.main - a.main)) / blocks, pg: (b.pg - a.pg) / blocks, wall: (b.t - a.t) / blocks });

const quiet = { info() {}, warn() {}, error: (o: object, m?: string) => console.error(m, o) };
try {
  if (STORES.includes('postgres')) pg = await startPostgres({ durable: true, settings: ['-c shared_buffers=256MB', '-c max_wal_size=8GB', ...PG_SETTINGS] });
  const warm: ParsedBlock[] = texts.slice(0, WARMUP + 1).map((t) => parseBlock(JSON.parse(t)));
  const results: Record<string, ReturnType<typeof per>[]> = { fetch: [], sqlite: [], postgres: [] };
  /** The main thread's event loop delay per round (ms): how long an answer from the daemon may wait for it. */
  const stalls: Record<string, string[]> = { fetch: [], sqlite: [], postgres: [] };
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of ['fetch', ...STORES] as const) {
      let store: ExplorerStore | null = null;
      if (kind === 'sqlite') store = new SqliteExplorerStore(path.join(dir, `i${n++}.sqlite`), { undoDepth: 1000 });
      if (kind === 'postgres') {
        const name = `i${n++}`;
        await pg!.createDatabase(name);
        store = new PgExplorerStore({ url: pg!.url(name), undoDepth: 1000 });
      }
      let scanner: Scanner | null = null;
      if (store) {
        scanner = new Scanner(recorded, store, { startHeight: 0, pollMs: 1000, retryMs: 1000, prefetch: PREFETCH, log: quiet });
        await scanner.open();
        await store.applyBlocks(warm);
      }
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      const a = cpu();
      if (scanner) await scanner.catchUp();
      else {
        const f = new BlockFetcher(recorded, WARMUP + 1, height, { window: PREFETCH });
        while ((await f.take(1)).length);
      }
      const b = cpu();
      delay.disable();
      stalls[kind].push(`p99 ${(delay.percentile(99) / 1e6).toFixed(1)} max ${(delay.max / 1e6).toFixed(1)}`);
      if (scanner && scanner.stats.blocks !== blocks) throw new Error(`indexed ${scanner.stats.blocks} of ${blocks}`);
      await store?.close();
      results[kind].push(per(a, b));
    }
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const f = (x: number) => x.toFixed(3);
  const row = (k: string) => {
    const r = results[k];
    const m = (key: Exclude<keyof ReturnType<typeof per>, 'threads'>) => med(r.map((x) => x[key]));
    return { main: m('main'), gc: m('gc'), others: m('others'), pg: m('pg'), wall: m('wall') };
  };
  const base = row('fetch');
  console.log(`${blocks} blocks a round, ${ROUNDS} rounds, medians, ms of CPU a block (load ${os.loadavg()[0].toFixed(1)})`);
  for (const k of ['fetch', ...STORES]) {
    const r = row(k);
    const extra = k === 'fetch' ? '' : `; added to the fetch: main ${f(r.main - base.main)}, others ${f(r.others - base.others)}, server ${f(r.pg)}, all ${f(r.main - base.main + r.others - base.others + r.pg)}`;
    console.log(`  ${k} rounds' other threads: ${results[k].map((x) => x.threads).join(' | ')}; event loop delay ${stalls[k].join(' | ')}`);
    console.log(`${k.padEnd(8)}: main ${f(r.main)} (GC pauses ${f(r.gc)}), other threads ${f(r.others)}${k === 'postgres' ? `, PostgreSQL ${f(r.pg)}` : ''}, wall ${f(r.wall)}${extra}`);
  }
} finally {
  await pg?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
