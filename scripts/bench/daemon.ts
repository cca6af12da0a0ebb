/**
 * Daemon relay throughput, one run against a real litecoind in regtest: requests per second of
 * `getblockcount` and `getblock <hash>` (verbosity 2, blocks carrying transactions) made
 *   1. straight to the daemon's JSON-RPC (POST with basic auth): the baseline;
 *   2. through the node with its cache off (`daemon.cache.ttlMs: 0`): every request is one RPC;
 *   3. through the node with its default cache (block count 1 s, blocks by hash 10 s).
 * Same concurrency for all (autocannon connections = the node's `daemon.concurrency`); the node runs in its
 * own process so the load generator does not share its event loop. Figures as ratios node/direct. One more
 * line: getblock by height through the cached node (the height is looked up uncached each time).
 *
 *   npm run bench:daemon [-- --connections 10 --seconds 5 --blocks 200]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
// autocannon ships no type declarations; Result below is the part this script reads.
// @ts-ignore
import autocannonUntyped from 'autocannon';
import { startLitecoind } from '../../test/support/litecoind.ts';

interface Result {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}
const autocannon = autocannonUntyped as (opts: Record<string, unknown>) => Promise<Result>;

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const CONNECTIONS = arg('connections', 10);
const SECONDS = arg('seconds', 5);
const BLOCKS = arg('blocks', 200);

/** Child mode: serve a node pointed at the daemon, print its port, stop on SIGTERM. */
async function serve(config: string) {
  const { startDaemonNode } = await import('../../test/daemon/support.ts');
  const { rpc, daemon } = JSON.parse(config);
  const node = await startDaemonNode(rpc, daemon);
  process.stdout.write(`PORT ${new URL(node.url).port}\n`);
  process.once('SIGTERM', () => void node.close().then(() => process.exit(0)));
}

async function nodeProcess(rpc: object, daemon: object): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve', JSON.stringify({ rpc, daemon })], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`node process exited (${code})`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

async function load(label: string, opts: Record<string, unknown>): Promise<number> {
  await autocannon({ ...opts, connections: CONNECTIONS, duration: 1 }); // warm-up
  const r = await autocannon({ ...opts, connections: CONNECTIONS, duration: SECONDS });
  const bad = r.errors + r.timeouts + r.non2xx;
  console.log(`  ${label.padEnd(44)} ${r.requests.average.toFixed(0).padStart(7)} req/s  p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms${bad ? `  (${bad} failed)` : ''}`);
  if (bad) throw new Error(`${label}: ${bad} failed requests`);
  return r.requests.average;
}

async function main() {
  const ltc = await startLitecoind();
  const children: ChildProcess[] = [];
  try {
    // A chain whose recent blocks carry transactions, so getblock verbosity 2 has work to do.
    await ltc.mine(BLOCKS);
    for (let b = 0; b < 5; b++) {
      for (let i = 0; i < 20; i++) await ltc.rpc.call('sendtoaddress', [await ltc.rpc.call('getnewaddress'), 0.01]);
      await ltc.mine(1);
    }
    const height = await ltc.rpc.call<number>('getblockcount');
    const hash = await ltc.rpc.call<string>('getblockhash', [height - 1]);
    const rpc = { url: ltc.url, user: ltc.user, password: ltc.password };
    const auth = 'Basic ' + Buffer.from(`${ltc.user}:${ltc.password}`).toString('base64');
    const direct = (method: string, params: unknown[]) => ({
      url: ltc.url,
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
    });
    // Same concurrency on both sides: the node may hold as many calls in flight as autocannon has connections.
    const uncached = await nodeProcess(rpc, { concurrency: CONNECTIONS, cache: { ttlMs: 0, blockTtlMs: 0 } });
    const cached = await nodeProcess(rpc, { concurrency: CONNECTIONS });
    children.push(uncached.child, cached.child);

    console.log(`daemon relay: litecoind ${height} blocks, block ${hash.slice(0, 12)}… with ${(await ltc.rpc.call<any>('getblock', [hash, 1])).tx.length} txs; ${CONNECTIONS} connections, ${SECONDS} s per run`);
    const figures: [string, number, number, number][] = [];
    for (const [name, method, params, path] of [
      ['getblockcount', 'getblockcount', [], '/daemon/getblockcount'],
      ['getblock <hash> (verbosity 2)', 'getblock', [hash, 2], `/daemon/getblock/${hash}`],
    ] as const) {
      console.log(name);
      const base = await load('direct JSON-RPC (baseline)', direct(method, [...params]));
      const off = await load('through the node, cache off', { url: uncached.url + path });
      const on = await load('through the node, cache on', { url: cached.url + path });
      figures.push([name, base, off, on]);
    }
    console.log('getblock <height> (verbosity 2)');
    const byHeight = await load('through the node, cache on (hash looked up)', { url: `${cached.url}/daemon/getblock/${height - 1}` });
    const blockBase = figures[1][1];

    console.log('\nratio node / direct (same connections)');
    for (const [name, base, off, on] of figures) console.log(`  ${name.padEnd(32)} uncached ${(off / base).toFixed(2)}x   cached ${(on / base).toFixed(2)}x`);
    console.log(`  ${'getblock <height>'.padEnd(32)} cached block, uncached height lookup ${(byHeight / blockBase).toFixed(2)}x`);
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await ltc.stop();
  }
}

if (process.argv.includes('--serve')) void serve(process.argv[process.argv.indexOf('--serve') + 1]);
else
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
