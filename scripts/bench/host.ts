/**
 * `npm run bench:host`: one run on one machine. A bare Koa + @koa/router app answering the same JSON as
 * /core/version is the baseline; then our host serves /core/version through its full chain. Prints both
 * rates and the ratio (goal >= 0.85), the time to swap a 500-route manifest while under load, start-up
 * time and idle memory. Servers run in child processes; autocannon runs here.
 */
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// autocannon ships no type declarations; Result below is the part this script reads.
// @ts-ignore
import autocannonUntyped from 'autocannon';

interface Result {
  requests: { average: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
}
const autocannon = autocannonUntyped as (opts: { url: string; connections: number; duration: number }) => Promise<Result>;

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DURATION = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = 50;

interface Ready {
  port: number;
  startMs: number;
  rss: number;
  wallMs: number;
}

async function spawnServer(mode: 'koa' | 'host'): Promise<{ child: ChildProcess; ready: Ready }> {
  const t = performance.now();
  const child = fork(path.join(HERE, 'host-server.ts'), [mode], { execArgv: ['--import', 'tsx', '--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`${mode} server exited (${code})`)));
    child.on('message', (m: any) => m.ready && resolve({ ...m, wallMs: performance.now() - t }));
  });
  return { child, ready };
}

function load(port: number, seconds: number, p = '/core/version') {
  return autocannon({ url: `http://127.0.0.1:${port}${p}`, connections: CONNECTIONS, duration: seconds });
}

async function measure(mode: 'koa' | 'host') {
  const { child, ready } = await spawnServer(mode);
  await load(ready.port, 1); // warm-up: JIT, connection pools
  const result = await load(ready.port, DURATION);
  return { child, ready, result };
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.disconnect();
    setTimeout(() => child.kill(), 3000).unref();
  });
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
const ms = (n: number) => `${n.toFixed(1)} ms`;

const koa = await measure('koa');
await stop(koa.child);
const host = await measure('host');

// Swap a 500-route manifest set five times while the host is under load; every swap is timed in the host.
const swaps: { swapMs: number; ok: boolean; routes: number }[] = [];
const during = load(host.ready.port, 3);
for (let i = 0; i < 5; i++) {
  await new Promise((r) => setTimeout(r, 400));
  host.child.send({ swap: true });
  swaps.push(await new Promise((resolve) => host.child.once('message', resolve as (m: unknown) => void)));
}
const underSwap = await during;
await stop(host.child);

const rate = (r: Result) => r.requests.average;
const sorted = swaps.map((s) => s.swapMs).sort((a, b) => a - b);
const lines = [
  `host benchmark: ${DURATION} s, ${CONNECTIONS} connections, GET /core/version, after a 1 s warm-up`,
  `  bare Koa + @koa/router : ${rate(koa.result).toFixed(0)} req/s (p99 ${koa.result.latency.p99} ms)`,
  `  corenode host          : ${rate(host.result).toFixed(0)} req/s (p99 ${host.result.latency.p99} ms, ${host.result.non2xx} non-2xx, ${host.result.errors} errors)`,
  `  ratio host / Koa       : ${(rate(host.result) / rate(koa.result)).toFixed(3)} (goal >= 0.85)`,
  `  swap of a 500-route manifest under load: median ${ms(sorted[2])}, max ${ms(sorted[4])}, all ok: ${swaps.every((s) => s.ok)}, ${swaps[0].routes} routes`,
  `    load during the swaps: ${rate(underSwap).toFixed(0)} req/s, ${underSwap.non2xx} non-2xx, ${underSwap.errors} errors`,
  `  start-up (host, 515 routes): ${ms(host.ready.startMs)} in-process, ${ms(host.ready.wallMs)} from spawn (Koa: ${ms(koa.ready.wallMs)} from spawn)`,
  `  idle memory (RSS after start): host ${mb(host.ready.rss)}, bare Koa ${mb(koa.ready.rss)}`,
];
console.log(lines.join('\n'));
