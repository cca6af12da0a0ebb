/**
 * `npm run bench:host`: one run on one machine. A bare Koa + @koa/router app answering the same JSON as
 * /core/version is the baseline; then our host serves /core/version through its full chain (with the core
 * and host manifests and a generated 500-route plugin loaded). Prints both rates and the ratio (goal
 * >= 0.85), the server CPU time per request, the time to swap the 500-route manifest while under load,
 * start-up time and idle memory.
 *
 * Servers run in child processes; autocannon runs here. The two measured runs are interleaved in 1 s slices
 * so that whatever else the machine does weighs on both alike.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// autocannon ships no type declarations; Result below is the part this script reads.
// @ts-ignore
import autocannonUntyped from 'autocannon';

interface Result {
  requests: { average: number; total: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
  duration: number;
}
const autocannon = autocannonUntyped as (opts: { url: string; connections: number; duration: number }) => Promise<Result>;

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 50;

interface Server {
  name: string;
  child: ChildProcess;
  port: number;
  startMs: number;
  rss: number;
  wallMs: number;
}

/** The next IPC message from `child` that carries `key`. */
function next<T>(child: ChildProcess, key: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: any) => {
      if (m && key in m) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      }
    };
    const onExit = (code: number) => reject(new Error(`server exited (${code}) while waiting for ${key}`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

async function spawnServer(mode: 'koa' | 'host'): Promise<Server> {
  const t = performance.now();
  const child = fork(path.join(HERE, 'host-server.ts'), [mode], { execArgv: ['--import', 'tsx', '--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await next<{ port: number; startMs: number; rss: number }>(child, 'ready');
  return { name: mode, child, ...ready, wallMs: performance.now() - t };
}

function load(port: number, seconds: number) {
  return autocannon({ url: `http://127.0.0.1:${port}/core/version`, connections: CONNECTIONS, duration: seconds });
}

async function cpu(s: Server): Promise<number> {
  s.child.send({ cpu: true });
  return (await next<{ cpuMicros: number }>(s.child, 'cpuMicros')).cpuMicros;
}

interface Tally {
  requests: number;
  seconds: number;
  cpuMicros: number;
  p99s: number[];
  bad: number;
}

async function slice(s: Server, t: Tally): Promise<void> {
  const c0 = await cpu(s);
  const r = await load(s.port, 1);
  t.cpuMicros += (await cpu(s)) - c0;
  t.requests += r.requests.total;
  t.seconds += r.duration;
  t.p99s.push(r.latency.p99);
  t.bad += r.non2xx + r.errors;
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.disconnect();
    setTimeout(() => child.kill(), 3000).unref();
  });
}

const koa = await spawnServer('koa');
const host = await spawnServer('host');
await load(koa.port, 1); // warm-up: JIT, sockets
await load(host.port, 1);
const tally = { koa: { requests: 0, seconds: 0, cpuMicros: 0, p99s: [], bad: 0 } as Tally, host: { requests: 0, seconds: 0, cpuMicros: 0, p99s: [], bad: 0 } as Tally };
for (let i = 0; i < SECONDS; i++) {
  await slice(koa, tally.koa);
  await slice(host, tally.host);
}
await stop(koa.child);

// Swap a 500-route manifest five times while the host is under load; every swap is timed in the host.
const swaps: { swapMs: number; ok: boolean; routes: number }[] = [];
const during = load(host.port, 3);
for (let i = 0; i < 5; i++) {
  await new Promise((r) => setTimeout(r, 400));
  host.child.send({ swap: true });
  swaps.push(await next(host.child, 'swapMs'));
}
const underSwap = await during;
await stop(host.child);

const rate = (t: Tally) => t.requests / t.seconds;
const perReq = (t: Tally) => t.cpuMicros / t.requests;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (n: number) => `${n.toFixed(1)} ms`;
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
const sorted = swaps.map((s) => s.swapMs).sort((a, b) => a - b);
console.log(
  [
    `host benchmark: GET /core/version, ${CONNECTIONS} connections, ${SECONDS} s each in 1 s slices taken in turn, after a 1 s warm-up`,
    `  bare Koa + @koa/router : ${rate(tally.koa).toFixed(0)} req/s (median p99 ${median(tally.koa.p99s)} ms), ${perReq(tally.koa).toFixed(1)} us CPU per request`,
    `  corenode host          : ${rate(tally.host).toFixed(0)} req/s (median p99 ${median(tally.host.p99s)} ms, ${tally.host.bad} non-2xx or errors), ${perReq(tally.host).toFixed(1)} us CPU per request`,
    `  ratio host / Koa       : ${(rate(tally.host) / rate(tally.koa)).toFixed(3)} by rate (goal >= 0.85); ${(perReq(tally.koa) / perReq(tally.host)).toFixed(3)} by CPU per request`,
    `  swap of a 500-route manifest under load: median ${ms(sorted[2])}, max ${ms(sorted[4])}, all ok: ${swaps.every((s) => s.ok)}, ${swaps[0].routes} routes`,
    `    load during the swaps: ${underSwap.requests.average.toFixed(0)} req/s, ${underSwap.non2xx} non-2xx, ${underSwap.errors} errors`,
    `  start-up (host, ${swaps[0].routes} routes): ${ms(host.startMs)} in-process, ${ms(host.wallMs)} from spawn incl. tsx (bare Koa: ${ms(koa.wallMs)} from spawn)`,
    `  idle memory (RSS after start): host ${mb(host.rss)}, bare Koa ${mb(koa.rss)}`,
  ].join('\n'),
);
