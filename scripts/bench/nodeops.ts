/**
 * Node operations, one run each, as ratios against a baseline measured in the same run:
 *   1. daemon restart through the API (`GET /core/restartdaemon`, answered once the daemon serves calls)
 *      against doing it by hand: `litecoin-cli stop`, wait for the process to exit, `litecoind -daemon`,
 *      poll until it serves calls. Real regtest litecoind, `--rounds` each, the by-hand ones with no node
 *      attached; medians.
 *   2. `GET /core/taildaemondebug` (last 100 lines) of a 1 GB log against the same of a 1 MB log, two nodes,
 *      requests interleaved in slices of 20; the 1 GB file is made sparse (its last 150 lines written) and
 *      deleted after.
 *
 *   npm run bench:nodeops [-- --rounds 3 --tails 200]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { startLitecoind } from '../../test/support/litecoind.ts';
import { asOperator, startOpsNode } from '../../test/node/support.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const ROUNDS = arg('rounds', 3);
const TAILS = arg('tails', 200);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function restartBench() {
  const ltc = await startLitecoind();
  await ltc.mine(20);
  (ltc.rpc as ReturnType<typeof createRpcClient>).close();
  const pidFile = path.join(ltc.datadir, 'regtest', 'bitcoind.pid');
  const startArgv = [`-datadir=${ltc.datadir}`, `-conf=${ltc.confFile}`, '-printtoconsole=0', '-daemon'];
  const serves = async () => {
    const c = createRpcClient({ url: ltc.url, user: ltc.user, password: ltc.password, timeoutMs: 2000, concurrency: 1 });
    try {
      await c.call('getblockcount');
      return true;
    } catch {
      return false;
    } finally {
      c.close();
    }
  };
  const node = await startOpsNode({
    withDaemon: true,
    daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password }, confFile: ltc.confFile, startCommand: ['litecoind', ...startArgv], stopWaitMs: 60_000, startWaitMs: 60_000 },
  });
  const api: number[] = [];
  const hand: number[] = [];
  let closed = false;
  try {
    for (let i = 0; i < ROUNDS; i++) {
      const t = performance.now();
      const a = await node.get('/core/restartdaemon', asOperator());
      if (a.json?.status !== 'success') throw new Error(a.text);
      api.push(performance.now() - t);
    }
    // By hand with no node running: a node's kept-alive RPC sockets would hold litecoind's shutdown for its
    // 30 s rpcservertimeout and make the baseline unfairly slow.
    await node.close();
    closed = true;
    for (let i = 0; i < ROUNDS; i++) {
      const t = performance.now();
      execFileSync('litecoin-cli', [`-datadir=${ltc.datadir}`, `-conf=${ltc.confFile}`, 'stop'], { stdio: 'ignore' });
      while (fs.existsSync(pidFile)) await sleep(20);
      execFileSync('litecoind', startArgv, { stdio: 'ignore' });
      while (!(await serves())) await sleep(20);
      hand.push(performance.now() - t);
    }
  } finally {
    if (!closed) await node.close();
    try {
      execFileSync('litecoin-cli', [`-datadir=${ltc.datadir}`, `-conf=${ltc.confFile}`, 'stop'], { stdio: 'ignore' });
    } catch {
      /* already down */
    }
    while (fs.existsSync(pidFile)) await sleep(50);
    await ltc.stop();
  }
  return { api: median(api), hand: median(hand) };
}

async function tailBench() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nodeops-bench-'));
  const lines = (n: number) => Array.from({ length: n }, (_, i) => `2026-01-01T00:00:00.000Z          a log line of ordinary length, number ${i}`).join('\n') + '\n';
  const big = path.join(dir, 'big.log');
  const small = path.join(dir, 'small.log');
  const tail = lines(150);
  fs.writeFileSync(big, '');
  fs.truncateSync(big, 1024 ** 3 - Buffer.byteLength(tail));
  fs.appendFileSync(big, tail);
  fs.writeFileSync(small, lines(Math.ceil((1024 * 1024) / 70)));
  // Both nodes up at once, requests interleaved in slices: neither file gets the warmer machine.
  const [bigNode, smallNode] = await Promise.all([big, small].map((file) => startOpsNode({ node: { daemon: { updateCommand: ['true'], debugLog: file } } })));
  const spent = new Map([[bigNode, 0], [smallNode, 0]]);
  const one = async (node: typeof bigNode) => {
    const a = await node.get('/core/taildaemondebug', asOperator());
    if (a.json?.data?.message?.split('\n').length !== 101) throw new Error(`not 100 lines: ${a.text.slice(0, 200)}`);
  };
  try {
    for (let i = 0; i < 20; i++) await Promise.all([one(bigNode), one(smallNode)]); // warm-up
    const SLICE = 20;
    for (let done = 0; done < TAILS; done += SLICE) {
      for (const node of done % (2 * SLICE) ? [smallNode, bigNode] : [bigNode, smallNode]) {
        const t = performance.now();
        for (let i = 0; i < SLICE; i++) await one(node);
        spent.set(node, spent.get(node)! + performance.now() - t);
      }
    }
    const bigMs = spent.get(bigNode)! / TAILS;
    const smallMs = spent.get(smallNode)! / TAILS;
    return { smallMs, bigMs, bigBytes: fs.statSync(big).size, smallBytes: fs.statSync(small).size };
  } finally {
    await Promise.all([bigNode.close(), smallNode.close()]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const t = await tailBench();
console.log(`tail of 100 lines: 1 GB log ${t.bigMs.toFixed(2)} ms, 1 MB log ${t.smallMs.toFixed(2)} ms per request (${TAILS} requests each) -> ratio ${(t.bigMs / t.smallMs).toFixed(2)}`);
const r = await restartBench();
console.log(`daemon restart: API ${(r.api / 1000).toFixed(2)} s, by hand (litecoin-cli stop + litecoind -daemon) ${(r.hand / 1000).toFixed(2)} s, median of ${ROUNDS} -> ratio ${(r.api / r.hand).toFixed(2)}`);
process.exit(0);
