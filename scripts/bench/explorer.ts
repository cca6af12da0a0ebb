/**
 * Explorer speed, one run against a real litecoind in regtest: build a chain of BLOCKS blocks carrying
 * transactions, then on the same RPC client
 *   1. fetch every block the way the scanner does (hashes batched, `getblock <hash> 2` with the same
 *      look-ahead) and do nothing with it: the baseline;
 *   2. index the same blocks into a fresh file-backed nedb store with the scanner.
 * Figures are blocks and transactions per second and the ratio index/fetch (goal: at least 0.5).
 * `--capacity N` also measures the embedded store with N synthetic outputs (load time, memory, file size).
 *
 *   npm run bench:explorer [-- --blocks 2000 --rounds 3 --capacity 1000000]
 */
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import NeDB from 'nedb-promises';
import { startLitecoind } from '../../test/support/litecoind.ts';
import { createRpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { BlockFetcher } from '../../plugins/explorer/fetch.ts';
import { NedbExplorerStore } from '../../plugins/explorer/nedb-store.ts';
import { Scanner } from '../../plugins/explorer/scanner.ts';
import { coinsToSatoshis } from '../../plugins/explorer/amount.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const BLOCKS = arg('blocks', 2000);
const PREFETCH = arg('prefetch', 32);
const CAPACITY = arg('capacity', 0);
const ROUNDS = arg('rounds', 3);
const quiet = { info() {}, warn() {}, error: (o: object, m?: string) => console.error(m, o) };
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MB`;

/**
 * Transactions are built with createrawtransaction + signrawtransactionwithwallet (the wallet's own coin
 * selection costs ~30 ms a payment at this size): each block carries 4 transactions, each spending two
 * earlier outputs of 20 wallet addresses (legacy and bech32) and paying four outputs.
 */
async function buildChain(ltc: Awaited<ReturnType<typeof startLitecoind>>) {
  const rpc = ltc.rpc;
  const wallet: string[] = [];
  for (let i = 0; i < 20; i++) wallet.push(await rpc.call<string>('getnewaddress', ['', i % 2 ? 'bech32' : 'legacy']));
  for (let i = 0; i < 100; i++) await ltc.mine(1, wallet[i % 20]);
  const sink = await rpc.call<string>('getnewaddress', ['', 'legacy']);
  await ltc.mine(100, sink);
  const pool = (await rpc.call<{ txid: string; vout: number; address: string; amount: number }[]>('listunspent'))
    .filter((u) => wallet.includes(u.address))
    .map((u) => ({ txid: u.txid, vout: u.vout, sats: coinsToSatoshis(u.amount) }));
  const fmt = (sats: number) => (sats / 1e8).toFixed(8);
  const t0 = Date.now();
  let txs = 0;
  for (let b = 0; b < BLOCKS - 200; b++) {
    const specs: { ins: { txid: string; vout: number; sats: number }[]; outs: Record<string, string>[]; w: number[] }[] = [];
    for (let k = 0; k < 4; k++) {
      const ins = [pool.shift()!, pool.shift()!];
      const sum = ins[0].sats + ins[1].sats;
      const small = Math.floor(sum / 200);
      const rest = sum - 2 * small - 30_000;
      const w = [Math.floor(rest / 2), rest - Math.floor(rest / 2)];
      const outs = [{ [wallet[(b + k) % 10]]: fmt(w[0]) }, { [wallet[10 + ((b * 3 + k) % 9)]]: fmt(w[1]) }, { [sink]: fmt(small) }, { [wallet[19]]: fmt(small) }];
      specs.push({ ins, outs, w });
    }
    const raws = await rpc.batch(specs.map((s) => ({ method: 'createrawtransaction', params: [s.ins.map(({ txid, vout }) => ({ txid, vout })), s.outs] })));
    const signed = await rpc.batch(raws.map((x) => ({ method: 'signrawtransactionwithwallet', params: [x] })));
    const sent = await rpc.batch(signed.map((x) => ({ method: 'sendrawtransaction', params: [(x as { hex: string }).hex] })));
    sent.forEach((txid, k) => {
      if (txid instanceof Error) throw txid;
      pool.push({ txid: txid as string, vout: 0, sats: specs[k].w[0] }, { txid: txid as string, vout: 1, sats: specs[k].w[1] });
      txs++;
    });
    await ltc.mine(1, sink);
  }
  console.log(`chain: ${BLOCKS} blocks, ${txs} payments built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function main() {
  const ltc = await startLitecoind();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corenode-explorer-bench-'));
  try {
    await buildChain(ltc);
    const height = await ltc.rpc.call<number>('getblockcount');
    // The client the node would use: the daemon plugin's defaults (5 calls in flight).
    const rpc = createRpcClient({ url: ltc.url, user: ltc.user, password: ltc.password, name: 'daemon' });

    let txCount = 0;
    let t = performance.now();
    for (let h = 0; h <= height; h++) {
      const hash = await rpc.call<string>('getblockhash', [h]);
      txCount += (await rpc.call<{ tx: unknown[] }>('getblock', [hash, 2])).tx.length;
    }
    const seqS = (performance.now() - t) / 1000;

    // Rounds alternate fetch and index so a busy moment of the machine hits both; each figure is the best of
    // its rounds (the least disturbed), and each round's own ratio is shown too.
    const fetchS: number[] = [];
    const indexS: number[] = [];
    let file = '';
    for (let round = 0; round < ROUNDS; round++) {
      t = performance.now();
      const fetcher = new BlockFetcher(rpc, 0, height, { window: PREFETCH });
      while ((await fetcher.take(1)).length);
      fetchS.push((performance.now() - t) / 1000);

      file = path.join(dir, `index-${round}.db`);
      const store = new NedbExplorerStore(NeDB.create({ filename: file, autoload: true }), { undoDepth: 1000 });
      const scanner = new Scanner(rpc, store, { startHeight: 0, pollMs: 1000, retryMs: 1000, prefetch: PREFETCH, log: quiet });
      t = performance.now();
      await scanner.catchUp();
      indexS.push((performance.now() - t) / 1000);
      if (scanner.stats.blocks !== height + 1) throw new Error(`indexed ${scanner.stats.blocks} blocks of ${height + 1}`);
    }

    const best = (xs: number[]) => Math.min(...xs);
    const rate = (x: number, s: number) => (x / s).toFixed(0).padStart(6);
    console.log(`blocks 0..${height} (${height + 1} blocks, ${txCount} transactions), best of ${ROUNDS} rounds`);
    console.log(`fetch, one call at a time : ${rate(height + 1, seqS)} blocks/s ${rate(txCount, seqS)} tx/s`);
    console.log(`fetch, look-ahead ${String(PREFETCH).padStart(2)}      : ${rate(height + 1, best(fetchS))} blocks/s ${rate(txCount, best(fetchS))} tx/s  (baseline)`);
    console.log(`index (scanner, nedb file) : ${rate(height + 1, best(indexS))} blocks/s ${rate(txCount, best(indexS))} tx/s`);
    console.log(`ratio index / baseline fetch: ${(best(fetchS) / best(indexS)).toFixed(2)} (goal >= 0.5); per round ${fetchS.map((f, i) => (f / indexS[i]).toFixed(2)).join(', ')}; vs one-at-a-time fetch: ${(seqS / best(indexS)).toFixed(2)}`);
    const m = process.memoryUsage();
    console.log(`memory at end: rss ${mb(m.rss)}, heap used ${mb(m.heapUsed)}; store file ${mb(fs.statSync(file).size)}`);
    if (CAPACITY > 0) await capacity(dir, CAPACITY);
  } finally {
    await ltc.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Synthetic outputs (one transaction entry each) in the store's own format, written block by block; then
 * the file is opened again in a fresh store, as a restarted node would: load time, heap it takes, one
 * balance query. Run with --expose-gc for exact heap figures (`node --expose-gc --import tsx ...`).
 */
async function capacity(dir: string, outputs: number) {
  const file = path.join(dir, 'capacity.db');
  const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});
  {
    const ds = NeDB.create({ filename: file, autoload: true });
    const store = new NedbExplorerStore(ds, { undoDepth: 100 });
    await store.open();
    let prev = '00'.repeat(32);
    const perBlock = 500;
    const t = performance.now();
    for (let h = 0; h * perBlock < outputs; h++) {
      const hash = h.toString(16).padStart(64, '0');
      const outs = [];
      for (let i = 0; i < perBlock; i++) {
        const txid = (h * perBlock + i).toString(16).padStart(64, '0');
        outs.push({ txid, vout: 0, address: `addr${(h * perBlock + i) % 100000}`, satoshis: 1000 + i, height: h, scriptPubKey: '76a914' + '11'.repeat(20) + '88ac', coinbase: false });
      }
      await store.applyBlocks([{ height: h, hash, prev, outputs: outs, spends: [], txCount: perBlock }]);
      prev = hash;
    }
    console.log(`capacity: ${outputs} outputs + ${outputs} transaction entries written in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    await (ds as any).compactDatafileAsync();
  }
  gc();
  const heap0 = process.memoryUsage().heapUsed;
  const t = performance.now();
  const again = new NedbExplorerStore(NeDB.create({ filename: file, autoload: true }), { undoDepth: 100 });
  await again.open();
  const loadS = (performance.now() - t) / 1000;
  gc();
  const heap = process.memoryUsage().heapUsed - heap0;
  const q = performance.now();
  const bal = await again.balance('addr42');
  const queryMs = performance.now() - q;
  const held = (await again.utxos('addr42')).length;
  console.log(
    `capacity: file ${mb(fs.statSync(file).size)}, reopened in ${loadS.toFixed(1)} s, heap ${mb(heap)} (${Math.round(heap / (2 * outputs))} bytes a document), ` +
      `rss ${mb(process.memoryUsage().rss)}, balance of an address with ${held} outputs in ${queryMs.toFixed(1)} ms (${bal})`,
  );
}

await main();
