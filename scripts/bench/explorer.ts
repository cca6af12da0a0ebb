/**
 * Explorer speed and scale, both stores (embedded SQLite, PostgreSQL), one run:
 *
 * 1. Indexing rate. A real litecoind in regtest gets a chain of BLOCKS blocks carrying transactions; then on
 *    one client (the node's own: the daemon service as the explorer calls it), rounds alternate fetching
 *    every block the way the scanner does (hashes batched, `getblock <hash> 2`, same look-ahead) and doing nothing with it (the baseline), and indexing the same
 *    blocks with the scanner into a fresh store of each kind, which holds blocks 0..WARMUP before the clock
 *    starts (its writer started and warm, as in a node that has been indexing); each index round comes right
 *    after a fetch round of its own. Figures: blocks and transactions per second, best of ROUNDS; the ratio
 *    index / fetch (goal >= 0.8) as the median of those pairs, and as best over best; per round, CPU a block by process and thread, and
 *    the main thread's GC pauses a block (scavenges apart: with the node's 2 MB semi-space they are most of it).
 * 2. Scale. A synthetic index of OUTPUTS unspent outputs and as many transaction entries (one transaction
 *    per output; one address holds BIG of them (1M, at most half), the rest spread over addresses holding
 *    ~9 each; scripts/bench/explorer-synthetic.ts) is written in bulk (`--build bulk`, the default: sorted
 *    loads into the store's own tables, indexes made after, minutes at 10M) or through the store's own
 *    batch API (`--build apply`: `applyBlocks`, runs of 32 blocks of 1,000 outputs; the real write path,
 *    over an hour at 10M on SQLite), not through a daemon, and checked against the generator (200
 *    addresses, the big address's balance). Then the store alone, fresh (as after a restart): open,
 *    balance and utxos p50/p99. Then a node (dist/core/cli/node.js, as `npm start` runs it; `--launch tsx`:
 *    the TypeScript sources) is started on it: time from spawn to the first answer of /explorer/balance
 *    (and the node's log lines on the way), its RSS while serving, p50/p99 of /explorer/balance and
 *    /explorer/utxo for typical addresses over HTTP against /explorer/scannedheight (the in-run baseline),
 *    and the big address's transactions listed page by page (cursor, 1,000 a page). The machine's load
 *    average is printed with each figure.
 *
 *   npm run bench:explorer [-- --blocks 5000 --warmup 1000 --rounds 5 --outputs 10000000 --pg-outputs N --big 1000000
 *                              --stores sqlite,postgres --launch dist|tsx --build bulk|apply --seed 1
 *                              --cache-mb N --client service|raw]   (--blocks 0 or --outputs 0 skips a part)
 *
 * The npm script runs it with the node's V8 flag (--max-semi-space-size=2, as `npm start` and the systemd
 * unit): the scanner and the SQLite writer thread then have the young generation they have in a node.
 *
 * Everything lives under $TMPDIR/explorer-bench-* (the SQLite sorts of a bulk build use $TMPDIR too) and is
 * removed at the end (the 10M indexes take GBs).
 */
// @ts-expect-error: plain JavaScript without declarations
import { buildIfStale } from '../build.mjs';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import pg from 'pg';
import os from 'node:os';
import path from 'node:path';
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { Ajv } from 'ajv';
import { createRpcClient, type RpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { createDaemonService } from '../../plugins/daemon/service.ts';
import { configSchema as daemonConfigSchema, type DaemonSettings } from '../../plugins/daemon/settings.ts';
import { REPO_ROOT } from '../../core/config.ts';
import { parseBlock, type RpcBlock } from '../../plugins/explorer/block.ts';
import { BlockFetcher } from '../../plugins/explorer/fetch.ts';
import { uncached } from '../../plugins/explorer/index.ts';
import { PgExplorerStore } from '../../plugins/explorer/pg-store.ts';
import { Scanner } from '../../plugins/explorer/scanner.ts';
import { SqliteExplorerStore } from '../../plugins/explorer/sqlite-store.ts';
import type { ExplorerStore, ParsedBlock } from '../../plugins/explorer/store.ts';
import { buildChain } from './explorer-chain.ts';
import { Synthetic, buildThroughApplyBlocks, bulkPostgres, bulkSqlite, verifyStore } from './explorer-synthetic.ts';
import { startLitecoind, type Regtest } from '../../test/support/litecoind.ts';
import { freePort } from '../../test/support/ports.ts';
import { fetchAnswer } from '../../test/support/node.ts';
import { Client } from '../../test/support/http-client.ts';
import { explorerManifests } from '../../test/explorer/node.ts';
import { pgBin, startPostgres, type Postgres } from '../../test/explorer/postgres.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
// 4,000 timed blocks a round (about 4 s): with 2,000, single pairs of rounds ranged from 0.54 to 1.18 in one
// run; with 4,000, from 0.69 to 1.00 over three (same VM). Building the chain takes 70 s instead of 40.
const BLOCKS = Number(arg('blocks', '5000'));
const PREFETCH = Number(arg('prefetch', '32'));
const ROUNDS = Number(arg('rounds', '5'));
/** Blocks 0..WARMUP are indexed before each round's clock starts (the writer's start and warm-up). */
const WARMUP = Number(arg('warmup', '1000'));
const OUTPUTS = Number(arg('outputs', '10000000'));
/** PostgreSQL's synthetic index size when it should differ (its build is the slower one here). */
const PG_OUTPUTS = Number(arg('pg-outputs', String(OUTPUTS)));
/** SQLite page cache of the store that builds the synthetic index (the serving node keeps the default). */
/** Outputs (and transactions) of the one big address (at most half the index). */
const BIG = Number(arg('big', '1000000'));
const BUILD_CACHE_MB = Number(arg('build-cache-mb', '256'));
/** How the synthetic index is written: `bulk` (sorted loads, indexes after: minutes at 10M) or `apply` (the store's applyBlocks, the real write path: small sizes). */
const BUILD = arg('build', 'bulk');
/** Seed of the synthetic index and of the addresses asked. */
const SEED = Number(arg('seed', '1'));
/** Serving node's SQLite page cache in MB (store.cacheMb; unset: the store's default). */
const SERVE_CACHE_MB = arg('cache-mb', '');
/** The one-minute load average of the shared machine, printed with each figure. */
const load = () => `load ${os.loadavg()[0].toFixed(1)}`;
/** Addresses asked: a seeded sequence, the same in every run. */
function sampler(seed: number, count: number) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) % count;
  };
}
const STORES = arg('stores', 'sqlite,postgres').split(',') as Kind[];
/**
 * `service`: the daemon client as a node gives it to its explorer (the daemon plugin's service with its
 * config defaults: calls in the priority lane, 2 at once; the hot-read cache bypassed). `raw`: a bare RPC
 * client with 5 calls in flight, what rounds one to nine measured.
 */
const CLIENT = arg('client', 'service');
/** How the serving node is started: `dist` (as `npm start` does) or `tsx` (the TypeScript sources compiled at start). */
const LAUNCH = arg('launch', 'dist');
type Kind = 'sqlite' | 'postgres';
const quiet = { info() {}, warn() {}, error: (o: object, m?: string) => console.error(m, o) };
const mb = (n: number) => `${(n / 2 ** 20).toFixed(0)} MB`;
const s1 = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** The daemon service with the daemon plugin's config defaults, as the explorer plugin calls it (uncached). */
function explorerClient(ltc: Regtest): RpcClient {
  const settings: Record<string, unknown> = { rpc: { url: ltc.url, user: ltc.user, password: ltc.password } };
  if (!new Ajv({ useDefaults: true, strict: false }).compile(daemonConfigSchema)(settings)) throw new Error('daemon settings');
  return uncached(createDaemonService(settings as unknown as DaemonSettings, { now: () => Date.now() }));
}

/** Where the stores of this run live. */
class Stores {
  private n = 0;
  private readonly pgNames = new Map<string, string>();
  constructor(
    readonly dir: string,
    private readonly pg: Postgres | null,
  ) {}
  get pgPid(): number | null {
    return this.pg?.pid() ?? null;
  }
  async fresh(kind: Kind, cacheMb?: number): Promise<{ store: ExplorerStore; config: Record<string, unknown>; again: () => ExplorerStore }> {
    const name = `idx${this.n++}`;
    const undoDepth = 1000;
    if (kind === 'sqlite') {
      const file = path.join(this.dir, `${name}.sqlite`);
      return { store: new SqliteExplorerStore(file, { undoDepth, cacheMb }), config: { kind: 'embedded', path: file }, again: () => new SqliteExplorerStore(file, { undoDepth }) };
    }
    await this.pg!.createDatabase(name);
    const url = this.pg!.url(name);
    this.pgNames.set(url, name);
    return { store: new PgExplorerStore({ url, undoDepth }), config: { kind: 'postgres', url }, again: () => new PgExplorerStore({ url, undoDepth }) };
  }
  /** Give a synthetic PostgreSQL index's disk back. */
  async dropDatabase(config: Record<string, unknown>) {
    await this.pg!.dropDatabase(this.pgNames.get(String(config.url))!);
  }
}

async function indexingRate(ltc: Regtest, stores: Stores) {
  const height = await ltc.rpc.call<number>('getblockcount');
  const rpc = CLIENT === 'raw' ? createRpcClient({ url: ltc.url, user: ltc.user, password: ltc.password, name: 'daemon' }) : explorerClient(ltc);
  // Rounds measure blocks WARMUP+1..height: blocks 0..WARMUP go into each fresh index before its round is
  // timed, in one call (runs as large as the scanner's). Each index of the benchmark has a writer thread of
  // its own, started cold, which a node starts once and then indexes with for hours: its start (module
  // loading), V8 compiling its hot functions on helper threads (160 optimisations in a 3,000-block round,
  // --trace-opt) and its heap growing to the size of a run (young generation 1 -> 16 MB, --trace-gc) would
  // otherwise be counted (measured here: writer and helper CPU a block 0.55-0.65 ms cold, 0.33-0.45 warm).
  const warm: ParsedBlock[] = [];
  for (let h = 0; h <= WARMUP; h++) warm.push(parseBlock(await rpc.call<RpcBlock>('getblock', [await rpc.call<string>('getblockhash', [h]), 2])));
  const first = WARMUP + 1;
  const blocks = height - WARMUP;
  let txCount = 0;
  for (let h = first; h <= height; h++) txCount += (await rpc.call<{ tx: unknown[] }>('getblock', [await rpc.call<string>('getblockhash', [h]), 2])).tx.length;
  // Rounds alternate fetch and index so a busy moment of the shared machine hits both. Each rate is the best
  // of its rounds (the least disturbed). The ratio is given two ways: best index over best fetch, and the
  // median of the pairs (each index round against the fetch round just before it). With rounds of 2,000 blocks
  // (about 2 s) single pairs ranged from 0.54 to 1.18, and the best-of ratio mostly said how lucky the single
  // fastest fetch round had been; the median of pairs compares rounds that ran under the same load.
  const fetchS: number[] = [];
  const indexS: Record<Kind, number[]> = { sqlite: [], postgres: [] };
  /** Each index round's ratio to the fetch round run just before it. */
  const paired: Record<Kind, number[]> = { sqlite: [], postgres: [] };
  const sizes: Record<string, string> = {};
  // Where an index round's time goes: this process's CPU (JSON parsing of the answers, the scanner, SQLite's
  // writes run here; PostgreSQL's in its server), and the scanner's split of wall time.
  const cpuShare = (c: NodeJS.CpuUsage, ms: number) => ((c.user + c.system) / 1000 / ms).toFixed(2);
  // CPU ms of a block, by who spends it: this process's main thread (RPC answers, JSON, the scanner), the rest
  // of this process (SQLite's writer thread, V8's and libuv's helpers), and litecoind (its JSON of every block).
  const cpuNow = () => ({ main: threadMs(process.pid, process.pid), all: processCpuMs(), daemon: threadMs(ltc.pid), threads: threadsMs(), pg: stores.pgPid ? treeMs(stores.pgPid) : 0, gc: { ...gcPauses } });
  const perBlock = (a: ReturnType<typeof cpuNow>, b: ReturnType<typeof cpuNow>, kind?: Kind) => {
    const f = (x: number) => (x / blocks).toFixed(2);
    // The busiest other thread of a SQLite round is its writer thread.
    const busiest = Math.max(0, ...[...b.threads].filter(([t]) => t !== process.pid).map(([t, ms]) => ms - (a.threads.get(t) ?? 0)));
    // Only while a PostgreSQL index is written: its pool's backends live through that round (and exit after).
    const server = kind === 'postgres' ? `, PostgreSQL ${f(b.pg - a.pg)}` : '';
    // The main thread's GC pauses (scavenges, and the rest: mark-compact steps and finalisation).
    const gc = `GC pauses ${f(b.gc.minorMs - a.gc.minorMs)} (${b.gc.minor - a.gc.minor} scavenges) + ${f(b.gc.otherMs - a.gc.otherMs)}`;
    return `CPU a block: main ${f(b.main - a.main)} (${gc}), busiest other thread ${f(busiest)}, all others ${f(b.all - a.all - (b.main - a.main))}, litecoind ${f(b.daemon - a.daemon)}${server} ms`;
  };
  const fetchBlockCpu: string[] = [];
  const splits: Record<Kind, string[]> = { sqlite: [], postgres: [] };
  const fetchCpu: string[] = [];
  /** One fetch round: the baseline the next index round is paired with. */
  const fetchRound = async () => {
    const t = performance.now();
    const cpu = process.cpuUsage();
    const c0 = cpuNow();
    const fetcher = new BlockFetcher(rpc, first, height, { window: PREFETCH });
    while ((await fetcher.take(1)).length);
    const s = (performance.now() - t) / 1000;
    fetchS.push(s);
    fetchCpu.push(cpuShare(process.cpuUsage(cpu), performance.now() - t));
    fetchBlockCpu.push(perBlock(c0, cpuNow()));
    return s;
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of STORES) {
      // Each index round right after a fetch round of its own: the pair sees the same state of the machine
      // (litecoind's CPU a block moved between 0.74 and 1.15 ms from one round to the next on this VM).
      const baseline = await fetchRound();
      const { store } = await stores.fresh(kind);
      const scanner = new Scanner(rpc, store, { startHeight: 0, pollMs: 1000, retryMs: 1000, prefetch: PREFETCH, log: quiet });
      await scanner.open();
      await store.applyBlocks(warm);
      const t = performance.now();
      const cpu = process.cpuUsage();
      const c0 = cpuNow();
      await scanner.catchUp();
      const ms = performance.now() - t;
      indexS[kind].push(ms / 1000);
      paired[kind].push(baseline / (ms / 1000));
      const { waitMs, parseMs, writeMs, tailMs } = scanner.timing;
      splits[kind].push(
        `cpu ${cpuShare(process.cpuUsage(cpu), ms)}, wait ${(waitMs / ms).toFixed(2)} parse ${(parseMs / ms).toFixed(2)} write ${(writeMs / ms).toFixed(2)} (after the last block ${(tailMs / ms).toFixed(2)}); ${perBlock(c0, cpuNow(), kind)}`,
      );
      if (scanner.stats.blocks !== blocks) throw new Error(`indexed ${scanner.stats.blocks} blocks of ${blocks}`);
      if (store instanceof SqliteExplorerStore) sizes[kind] = mb(store.sizeOnDisk());
      await store.close();
    }
  }
  const best = (xs: number[]) => Math.min(...xs);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const rate = (x: number, s: number) => (x / s).toFixed(0).padStart(6);
  console.log(`\n## Indexing: blocks ${first}..${height} (${blocks} blocks, ${txCount} transactions; blocks 0..${WARMUP} written before the clock starts), best of ${ROUNDS} rounds`);
  console.log(`fetch, look-ahead ${String(PREFETCH).padStart(2)}       : ${rate(blocks, best(fetchS))} blocks/s ${rate(txCount, best(fetchS))} tx/s  (baseline)`);
  for (const kind of STORES) {
    const xs = indexS[kind];
    console.log(`index (scanner, ${kind.padEnd(8)}) : ${rate(blocks, best(xs))} blocks/s ${rate(txCount, best(xs))} tx/s` + (sizes[kind] ? `, file ${sizes[kind]}` : ''));
    console.log(`  ratio index / fetch (goal >= 0.8): median of pairs ${median(paired[kind]).toFixed(2)} (${paired[kind].map((r) => r.toFixed(2)).join(', ')}); best over best ${(best(fetchS) / best(xs)).toFixed(2)}`);
    console.log(`  per round, this process's CPU share of the wall time and the scanner's split of it: ${splits[kind].join('; ')} (fetch rounds: cpu ${fetchCpu.join(', ')}; ${fetchBlockCpu.join('; ')})`);
  }
}

/** GC pauses of this process's main thread so far (PerformanceObserver 'gc' entries), scavenges apart. */
const gcPauses = { minor: 0, minorMs: 0, otherMs: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if ((e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) {
      gcPauses.minor++;
      gcPauses.minorMs += e.duration;
    } else gcPauses.otherMs += e.duration;
  }
}).observe({ entryTypes: ['gc'] });

/** CPU ms a thread (`tid` of process `pid`) or a whole process (no `tid`) has used, from /proc. */
function threadMs(pid: number, tid?: number): number {
  const f = fs.readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime, in USER_HZ (100)
}
/** CPU ms of each thread of this process, by thread id. */
/** CPU ms of a process and its children alive now (PostgreSQL's server: a process per connection; its
 * backends live as long as the store's pool, the whole round). */
function treeMs(pid: number): number {
  let ms = threadMs(pid);
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const f = fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(f[1]) === pid) ms += ((Number(f[11]) + Number(f[12])) * 1000) / 100;
    } catch {
      // gone meanwhile
    }
  }
  return ms;
}
const threadsMs = () => new Map(fs.readdirSync(`/proc/${process.pid}/task`).map((t) => [Number(t), threadMs(process.pid, Number(t))] as const));
const processCpuMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

// --- synthetic index (scripts/bench/explorer-synthetic.ts) -------------------------------------------------

function rssOf(pid: number): { rss: number; hwm: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)![1]) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

/** A node started on the synthetic index (block processing off: the index is not of the daemon's chain). */
async function serve(kind: Kind, config: Record<string, unknown>, ltc: Regtest, syn: Synthetic, dir: string) {
  const manifestsDir = explorerManifests();
  const dataDir = fs.mkdtempSync(path.join(dir, 'node-'));
  const port = await freePort();
  const configFile = path.join(dataDir, 'node.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      manifestsDir,
      watch: false,
      log: { level: 'info' },
      daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password } },
      explorer: { autoStart: false, store: config, pageLimit: 1000 },
    }),
  );
  const base = `http://127.0.0.1:${port}`;
  // A stale dist/ would be rebuilt by the launcher inside the measured start (minutes on this machine).
  if (LAUNCH !== 'tsx') buildIfStale();
  const t0 = performance.now();
  // As `npm start` and the systemd unit run it: node on the compiled JS in dist/ (built first when stale).
  // `--launch tsx` starts it the way earlier figures did (tsx compiling the TypeScript sources at start).
  const argv = LAUNCH === 'tsx' ? ['--import', 'tsx', path.join(REPO_ROOT, 'core/cli/node.ts')] : ['--max-semi-space-size=2', path.join(REPO_ROOT, 'scripts/launch.mjs'), 'dist/core/cli/node.js'];
  const child = spawn(process.execPath, argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, CORENODE_CONFIG: configFile, CORENODE_PORT: String(port), CORENODE_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // When the process has loaded its code (first log line), the explorer's store open, the host listening with every plugin set up.
  let openMs = NaN;
  let firstLogMs = NaN;
  let listeningMs = NaN;
  /** Every log line until the first answer with when it came: the longest gaps say where the start goes. */
  const timeline: [number, string][] = [];
  let buffered = '';
  child.stdout!.on('data', (d) => {
    if (Number.isNaN(firstLogMs)) firstLogMs = performance.now() - t0;
    buffered += d;
    for (let i = buffered.indexOf('\n'); i >= 0; i = buffered.indexOf('\n')) {
      const line = buffered.slice(0, i);
      buffered = buffered.slice(i + 1);
      if (line.includes('explorer: index open')) openMs = JSON.parse(line).openMs;
      try {
        const j = JSON.parse(line) as { msg?: string; plugin?: string };
        timeline.push([performance.now() - t0, `${j.msg ?? ''}${j.plugin ? ` ${j.plugin}` : ''}`]);
      } catch {}
      if (line.includes('listening') && Number.isNaN(listeningMs)) listeningMs = performance.now() - t0;
    }
  });
  const exited = new Promise((r) => child.once('exit', r));
  let closeClient = () => {};
  try {
    const typical = syn.typical(1);
    for (;;) {
      const a = await fetchAnswer(`${base}/explorer/balance?address=${typical}`).catch(() => null);
      if (a?.json?.status === 'success') break;
      if (child.exitCode !== null) throw new Error('node exited');
      await new Promise((r) => setTimeout(r, 10));
    }
    const startMs = performance.now() - t0;
    const loadStart = load();
    const rssStart = rssOf(child.pid!);
    const gaps = timeline.map(([ms, msg], i) => ({ gap: ms - (i ? timeline[i - 1][0] : 0), at: ms, msg })).sort((a, b) => b.gap - a.gap);
    const longest = gaps
      .slice(0, 4)
      .map((g) => `${(g.gap / 1000).toFixed(2)} s before "${g.msg}" (at ${(g.at / 1000).toFixed(2)} s)`)
      .join('; ');
    // The queries go over one kept-alive node:http connection (test/support/http-client.ts): undici's fetch added its own
    // p50 0.3 ms and doubled the p99 of what was measured.
    const client = new Client(base, '127.0.0.1', 1);
    closeClient = () => client.close();
    const time = async (p: string) => {
      const t = performance.now();
      const a = await client.get(p);
      if (a.json?.status !== 'success') throw new Error(`${p}: ${a.text.slice(0, 200)}`);
      return { ms: performance.now() - t, a };
    };
    // Typical addresses at random, each asked twice: the first answer may include the daemon's check that the
    // address is of its network (validateaddress, asked once per address form, then remembered), the second
    // is the index alone.
    const balance: number[] = [];
    const utxo: number[] = [];
    // The same host, plugin and connection without a store read or an address check: the in-run baseline.
    const baseline: number[] = [];
    const balanceFirst: number[] = [];
    const utxoFirst: number[] = [];
    let outs = 0;
    const next = sampler(SEED * 31 + 13, syn.typicalCount);
    const loadQueries = load();
    for (let q = 0; q < 1000; q++) {
      const addr = syn.typical(next());
      balanceFirst.push((await time(`/explorer/balance?address=${addr}`)).ms);
      utxoFirst.push((await time(`/explorer/utxo?address=${addr}`)).ms);
      baseline.push((await time('/explorer/scannedheight')).ms);
      balance.push((await time(`/explorer/balance?address=${addr}`)).ms);
      const u = await time(`/explorer/utxo?address=${addr}`);
      utxo.push(u.ms);
      outs += u.a.json.data.length;
    }
    const loadAfterQueries = load();
    const rssQueries = rssOf(child.pid!);
    // The big address: every transaction, a page at a time.
    const pages: number[] = [];
    let listed = 0;
    let cursor: string | null = null;
    const tList = performance.now();
    for (;;) {
      const { ms, a } = await time(`/explorer/transactions?address=${syn.big}&limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
      pages.push(ms);
      listed += a.json.data.transactions.length;
      cursor = (a.headers['x-explorer-next-cursor'] as string | undefined) ?? null;
      if (!cursor) break;
    }
    const listMs = performance.now() - tList;
    const bigBalance = await time(`/explorer/balance?address=${syn.big}`);
    if (BigInt(bigBalance.a.json.data) !== syn.bigBalance() || listed !== syn.bigCount) throw new Error(`the big address: ${listed} transactions listed (expected ${syn.bigCount}), balance ${bigBalance.a.json.data}`);
    const rss = rssOf(child.pid!);
    const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms`;
    console.log(
      `serving (${kind}, ${LAUNCH}): start to first answer ${(startMs / 1000).toFixed(2)} s: code loaded (first log line) at ${(firstLogMs / 1000).toFixed(2)} s, listening with every plugin set up at ${(listeningMs / 1000).toFixed(2)} s (store open ${openMs} ms), then one balance with the daemon's address check (${loadStart})`,
    );
    console.log(`  longest gaps between the node's log lines: ${longest}`);
    console.log(`  the node's log lines until then: ${timeline.map(([ms, msg]) => `${(ms / 1000).toFixed(2)} ${msg}`).join(' | ')}`);
    console.log(`  RSS ${mb(rssStart.rss)} at first answer, ${mb(rssQueries.rss)} after the 1000 addresses' queries, ${mb(rss.rss)} after listing the big address (peak ${mb(rss.hwm)})`);
    console.log(`  queries of 1000 typical addresses (${loadQueries} before, ${loadAfterQueries} after):`);
    console.log(`  HTTP /explorer/scannedheight (baseline: no store read, no address check): ${f(baseline)}`);
    console.log(`  HTTP /explorer/balance, 1000 typical addresses: ${f(balance)} (first ask of each address, the daemon asked once per address form: ${f(balanceFirst)})`);
    console.log(`  HTTP /explorer/utxo, same addresses (${(outs / 1000).toFixed(1)} outputs each): ${f(utxo)} (first ask: ${f(utxoFirst)})`);
    console.log(`  HTTP /explorer/transactions of the big address: ${listed} entries in ${pages.length} pages of 1000 (cursor) in ${s1(listMs)}; page ${f(pages)} (${load()})`);
    console.log(`  HTTP /explorer/balance of the big address (${listed} outputs): ${bigBalance.ms.toFixed(0)} ms`);
  } finally {
    closeClient();
    child.kill('SIGTERM');
    await exited;
    fs.rmSync(manifestsDir, { recursive: true, force: true });
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** The store alone, opened fresh (as after a restart), in this process: p50/p99 of balance and utxos. */
async function storeLatency(kind: Kind, store: ExplorerStore, syn: Synthetic) {
  const t0 = performance.now();
  await store.open();
  const openMs = performance.now() - t0;
  const balance: number[] = [];
  const utxos: number[] = [];
  const next = sampler(SEED * 31 + 11, syn.typicalCount);
  for (let q = 0; q < 2000; q++) {
    const addr = syn.typical(next());
    let t = performance.now();
    await store.balance(addr);
    balance.push(performance.now() - t);
    t = performance.now();
    await store.utxos(addr, { limit: 1001 });
    utxos.push(performance.now() - t);
  }
  await store.close();
  const f = (xs: number[]) => `p50 ${pct(xs, 50).toFixed(2)} ms, p99 ${pct(xs, 99).toFixed(2)} ms`;
  console.log(`store (${kind}), fresh instance: open ${openMs.toFixed(0)} ms; balance ${f(balance)}; utxos ${f(utxos)} (2000 random typical addresses; ${load()})`);
}

async function scale(ltc: Regtest, stores: Stores) {
  for (const kind of STORES) {
    const outputs = kind === 'postgres' ? PG_OUTPUTS : OUTPUTS;
    const syn = new Synthetic({ outputs, big: BIG, seed: SEED });
    console.log(`\n## Scale (${kind}): ${outputs} outputs + ${outputs} transaction entries (${syn.blocks} blocks; ${syn.typicalCount} typical addresses; one address with ${syn.bigCount}); build: ${BUILD}`);
    const { store, config, again } = await stores.fresh(kind, BUILD_CACHE_MB);
    const t0 = performance.now();
    const loadBefore = load();
    const log = (line: string) => console.log(`${line} (${load()})`);
    if (BUILD === 'apply') {
      await buildThroughApplyBlocks(store, syn, log);
      await store.close();
    } else if (kind === 'sqlite') await bulkSqlite(String(config.path), syn, { undoDepth: 1000, cacheMb: BUILD_CACHE_MB, log });
    else await bulkPostgres(String(config.url), syn, { undoDepth: 1000, psql: pgBin('psql'), log });
    const ms = performance.now() - t0;
    const size = mb(await sizeOnDisk(kind, config, store));
    console.log(`build (${kind}, ${BUILD}): ${s1(ms)}, ${Math.round(outputs / (ms / 1000))} outputs/s, ${size} on disk (${loadBefore} at start, ${load()} at end)`);
    // The index is the generator's: 200 typical addresses in full, and the big address's balance.
    const check = again();
    await check.open();
    const next = sampler(SEED * 31 + 7, syn.typicalCount);
    await verifyStore(check, syn, Array.from({ length: 200 }, next), false);
    if ((await check.balance(syn.big)) !== syn.bigBalance()) throw new Error('the big address\'s balance differs from the generator\'s');
    await check.close();
    console.log(`verified: 200 typical addresses (balance, unspent outputs, transactions) and the big address's balance equal the generator's`);
    await storeLatency(kind, again(), syn);
    await serve(kind, SERVE_CACHE_MB ? { ...config, cacheMb: Number(SERVE_CACHE_MB) } : config, ltc, syn, stores.dir);
    if (kind === 'sqlite') for (const f of [String(config.path), `${config.path}-wal`, `${config.path}-shm`]) fs.rmSync(f, { force: true });
    else await stores.dropDatabase(config);
  }
}

async function sizeOnDisk(kind: Kind, config: Record<string, unknown>, store: ExplorerStore): Promise<number> {
  if (store instanceof SqliteExplorerStore) return store.sizeOnDisk();
  const c = new pg.Client({ connectionString: String(config.url) });
  await c.connect();
  try {
    return Number((await c.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0].n);
  } finally {
    await c.end();
  }
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'explorer-bench-'));
  let ltc: Regtest | null = null;
  let pg: Postgres | null = null;
  try {
    ltc = await startLitecoind();
    // A durable cluster (fsync on) with the two settings an operator raises for an index of this size:
    // shared buffers, and WAL between checkpoints (the default 1 GB checkpoints every few seconds here).
    if (STORES.includes('postgres')) pg = await startPostgres({ durable: true, settings: ['-c shared_buffers=256MB', '-c max_wal_size=8GB'] });
    const stores = new Stores(dir, pg);
    if (BLOCKS > 0) {
      await buildChain(ltc, BLOCKS);
      await indexingRate(ltc, stores);
    }
    if (OUTPUTS > 0) await scale(ltc, stores);
  } finally {
    await pg?.stop();
    await ltc?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
