/**
 * The scanner and each store (embedded SQLite, PostgreSQL) against a real litecoind in regtest: a few
 * hundred blocks with payments between several addresses (fetched in height order, mid-sized blocks each
 * on a connection of its own), reorganisations forced with `invalidateblock`, and crashes at every write step
 * of a run (the store is opened again, as after kill -9). After each, every address's balance and unspent
 * outputs equal the daemon's `scantxoutset`.
 */
import assert from 'node:assert/strict';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { execFileSync } from 'node:child_process';
import { BlockFetcher } from '../../plugins/explorer/fetch.ts';
import { Scanner } from '../../plugins/explorer/scanner.ts';
import { blockRows, type ExplorerStore } from '../../plugins/explorer/store.ts';
import { activity, assertMatchesDaemon, chainView, openIndex, rpcFor, silent, walletAddresses } from './support.ts';
import { storeKinds } from './stores.ts';

// One chain for both stores (building it is most of this suite's time); each store's tests go on from where
// the other left the chain (their checks are relative to the daemon's tip).
describe('explorer scanner on a real chain', function () {
  this.timeout(180_000);
  let ltc: Regtest;
  let addrs: string[];

  before(async () => {
    ltc = await startLitecoind();
    addrs = await walletAddresses(ltc, 6);
    await ltc.mine(101, addrs[0]);
    for (let i = 0; i < 40; i++) await activity(ltc, addrs, i);
    await ltc.mine(60, addrs[3]);
    for (let i = 40; i < 60; i++) await activity(ltc, addrs, i);
  });
  after(async () => {
    await ltc?.stop();
  });

  it('fetches every block in height order; an answer past 16 KB (the daemon\'s first write) is asked again on a connection of its own, a method with many goes there at once, none left behind', async () => {
    // Blocks of 20 payments (about 5 KB, a 30 KB answer; sizes vary with the wallet's coins) after the small ones.
    const first = (await ltc.rpc.call<number>('getblockcount')) - 3;
    for (let b = 0; b < 3; b++) {
      for (let k = 0; k < 20; k++) await ltc.rpc.call('sendtoaddress', [addrs[k % addrs.length], 0.01]);
      await ltc.mine(1, addrs[0]);
    }
    const to = await ltc.rpc.call<number>('getblockcount');
    const answerBytes = async (h: number) => {
      const hash = await ltc.rpc.call<string>('getblockhash', [h]);
      // What the daemon sends (litecoind writes JSON without spaces; amounts as it formats them).
      return { hash, bytes: JSON.stringify(await ltc.rpc.call('getblock', [hash, 2])).length };
    };
    const coinbaseOnly = await answerBytes(1);
    const mid = await answerBytes(to);
    assert.ok(coinbaseOnly.bytes < 8 * 1024 && mid.bytes > 16 * 1024, `answers of ${coinbaseOnly.bytes} and ${mid.bytes} bytes`);

    // The client, call by call: small answers keep the method on kept-alive connections; a large one
    // announced there is asked again on a connection of its own (its rest would wait for a delayed ACK);
    // once large answers are more than a quarter of the recent ones, the method's calls go on connections
    // of their own, until small ones bring the share down again.
    const rpc = rpcFor(ltc);
    const opened = async (hash: string) => {
      const before = rpc.ownConnectionsOpened;
      const block = await rpc.call<{ hash: string }>('getblock', [hash, 2]);
      assert.equal(block.hash, hash);
      return rpc.ownConnectionsOpened - before;
    };
    const times = <T,>(n: number, x: T) => Array.from({ length: n }, () => x);
    const seen: number[] = [];
    for (const hash of [coinbaseOnly.hash, ...times(5, mid.hash), ...times(8, coinbaseOnly.hash)]) seen.push(await opened(hash));
    assert.deepEqual(seen, [0, ...times(5, 1), ...times(5, 1), ...times(3, 0)], 'own connections opened, call by call');
    const own = rpc.ownConnectionsOpened;
    await rpc.call('getblockcount');
    assert.equal(rpc.ownConnectionsOpened, own);
    await rpc.call('getblockcount', [], { ownConnection: true });
    assert.equal(rpc.ownConnectionsOpened, own + 1);
    // Told to stay kept-alive, a large answer is waited for there.
    await rpc.call('getblock', [mid.hash, 2], { ownConnection: false });
    assert.equal(rpc.ownConnectionsOpened, own + 1);

    // The fetcher over small and mid-sized blocks, with look-ahead 32 and 1: every block, in height order.
    for (const window of [32, 1]) {
      const fetcher = new BlockFetcher(rpc, first, to, { window });
      const heights: number[] = [];
      for (let got = await fetcher.take(1); got.length; got = await fetcher.take(1)) heights.push(...got.map((b) => b.height));
      assert.deepEqual(heights, Array.from({ length: to - first + 1 }, (_, i) => first + i), `window ${window}`);
    }
    assert.ok(rpc.ownConnectionsOpened > own + 1, 'the mid-sized blocks went on connections of their own');
    // Own connections are reset once answered: none left open, none waiting in TIME_WAIT.
    const port = new URL(ltc.url).port;
    const sockets = (state: string) => execFileSync('ss', ['-Htn', 'state', state, 'dport', '=', `:${port}`], { encoding: 'utf8' }).split('\n').filter(Boolean).length;
    assert.equal(sockets('time-wait'), 0);
    assert.ok(sockets('established') <= 2 * 5, `${sockets('established')} connections to the daemon (kept-alive: 5 a client)`);
    rpc.close();
  });

  /** The runs the scanner hands to `store` from now on: blocks and rows of each. */
  function recordRuns(store: ExplorerStore): { blocks: number; rows: number }[] {
    const runs: { blocks: number; rows: number }[] = [];
    const apply = store.applyBlocks.bind(store);
    store.applyBlocks = (bs) => {
      runs.push({ blocks: bs.length, rows: bs.reduce((n, b) => n + blockRows(b), 0) });
      return apply(bs);
    };
    return runs;
  }

  for (const kind of storeKinds())
  describe(`${kind.name} store`, function () {
    before(() => kind.setup());
    after(() => kind.teardown());

    it('indexes every block and matches the daemon for every address (balances, unspent outputs, transactions)', async () => {
      const { scanner, store } = await openIndex(ltc, kind, 'main');
      const tip = await scanner.catchUp();
      assert.equal(tip, await ltc.rpc.call<number>('getblockcount'));
      assert.ok(tip! >= 220);
      const seen = await assertMatchesDaemon(ltc.rpc, store);
      assert.ok(seen.addresses >= 7 && seen.utxos > 100, JSON.stringify(seen));
      assert.ok(scanner.stats.txs > scanner.stats.blocks, 'blocks carried payments');
    });

    it('pages every address\'s lists (limit, offset, cursor) in the order of the whole list', async () => {
      const { store } = await openIndex(ltc, kind, 'main');
      await store.open();
      const { txsOf } = await chainView(ltc.rpc);
      for (const a of txsOf.keys()) {
        const utxos = await store.utxos(a);
        const txs = await store.transactions(a);
        const key = (u: { height: number; txid: string; vout: number }) => [u.height, u.txid, u.vout] as const;
        const sorted = [...utxos].sort((x, y) => x.height - y.height || (x.txid < y.txid ? -1 : x.txid > y.txid ? 1 : x.vout - y.vout));
        assert.deepEqual(utxos.map(key), sorted.map(key), `outputs of ${a} oldest first`);
        for (const limit of [1, 3, 50]) {
          const walked: typeof utxos = [];
          for (let page = await store.utxos(a, { limit }); page.length; page = await store.utxos(a, { limit, after: walked.at(-1) })) walked.push(...page);
          assert.deepEqual(walked, utxos, `outputs of ${a} in pages of ${limit}`);
          const walkedTx: typeof txs = [];
          for (let page = await store.transactions(a, { limit }); page.length; page = await store.transactions(a, { limit, after: walkedTx.at(-1) })) walkedTx.push(...page);
          assert.deepEqual(walkedTx, txs, `transactions of ${a} in pages of ${limit}`);
        }
        assert.deepEqual(await store.utxos(a, { limit: 2, offset: 3 }), utxos.slice(3, 5));
        assert.deepEqual(await store.transactions(a, { limit: 2, offset: 1, after: txs[0] }), txs.slice(2, 4));
      }
      await store.close();
    });

    it('resumes from the file after a restart without counting anything twice', async () => {
      await activity(ltc, addrs, 61);
      const { scanner, store } = await openIndex(ltc, kind, 'main');
      await scanner.catchUp();
      assert.equal(scanner.stats.blocks, 1);
      await assertMatchesDaemon(ltc.rpc, store);
    });

    it('rolls back a reorganisation to the fork and applies the new branch (longer, equal and shorter)', async () => {
      const { scanner, store } = await openIndex(ltc, kind, 'main');
      await scanner.catchUp();
      const rpc = ltc.rpc;

      // Longer branch: invalidate the last 5 blocks, add different payments, mine 7 to another address.
      let tip = await rpc.call<number>('getblockcount');
      const gone = await rpc.call<string>('getblockhash', [tip - 4]);
      await rpc.call('invalidateblock', [gone]);
      await rpc.call('sendtoaddress', [addrs[5], 1.23456789]);
      for (let i = 0; i < 3; i++) await activity(ltc, addrs, 100 + i, addrs[4]);
      await ltc.mine(4, addrs[2]);
      assert.equal(await rpc.call<number>('getblockcount'), tip + 2);
      await scanner.catchUp();
      assert.equal(scanner.stats.reorgs, 1);
      assert.equal(scanner.stats.undone, 5);
      await assertMatchesDaemon(rpc, store);

      // Same height: replace the last 2 blocks by 2 others.
      tip = await rpc.call<number>('getblockcount');
      await rpc.call('invalidateblock', [await rpc.call<string>('getblockhash', [tip - 1])]);
      await activity(ltc, addrs, 200, addrs[1]);
      await ltc.mine(1, addrs[0]);
      assert.equal(await rpc.call<number>('getblockcount'), tip);
      await scanner.catchUp();
      assert.equal(scanner.stats.reorgs, 2);
      await assertMatchesDaemon(rpc, store);

      // Shorter: the daemon's best chain drops 3 blocks and gains 1.
      tip = await rpc.call<number>('getblockcount');
      await rpc.call('invalidateblock', [await rpc.call<string>('getblockhash', [tip - 2])]);
      await ltc.mine(1, addrs[5]);
      await scanner.catchUp();
      assert.equal(store.tip()!.height, tip - 2);
      assert.equal(scanner.stats.reorgs, 3);
      await assertMatchesDaemon(rpc, store);
    });


    for (const step of ['journal', 'spent', 'added', 'tip'] as const) {
      it(`recovers from a crash after the "${step}" write of a run: nothing lost, nothing counted twice`, async () => {
        const file = `crash-${step}`;
        await kind.copy('main', file);
        for (let i = 0; i < 3; i++) await activity(ltc, addrs, 300 + i);
        const crashing = await openIndex(ltc, kind, file, { fault: { step } });
        await assert.rejects(crashing.scanner.catchUp(), /simulated crash/);
        // A new process: the same index read again.
        const { scanner, store } = await openIndex(ltc, kind, file);
        await scanner.catchUp();
        await assertMatchesDaemon(ltc.rpc, store);
      });
    }

    it('a writer thread that dies mid-run fails the run with a clear error; the same scanner then recovers', async () => {
      const file = 'crash-thread';
      await kind.copy('main', file);
      for (let i = 0; i < 3; i++) await activity(ltc, addrs, 500 + i);
      // Runs and transactions of a block each, several runs in flight: the thread dies in the second
      // transaction, with runs queued behind it. The thread runs from the TypeScript sources through tsx
      // (every other test here runs the compiled one, dist/ being current), the path of a tree not built.
      const { scanner, store } = await openIndex(ltc, kind, file, { fault: { step: 'added', nth: 2, how: 'die' }, prefetch: 1, batchRows: 1, rowsPerTransaction: 1, writerFromSources: true });
      await scanner.open();
      const before = store.tip()!.height;
      await assert.rejects(scanner.catchUp(), /explorer index writer thread failed: simulated crash after added/);
      const after = store.tip()!.height;
      assert.ok(after > before && after < (await ltc.rpc.call<number>('getblockcount')), `the tip is the last transaction committed (${before} -> ${after})`);
      await scanner.catchUp();
      await assertMatchesDaemon(ltc.rpc, store);
    });

    for (const step of ['undo-marked', 'reverted'] as const) {
      it(`recovers from a crash during a reorg's undo ("${step}")`, async () => {
        const file = `crash-${step}`;
        const rpc = ltc.rpc;
        {
          const { scanner } = await openIndex(ltc, kind, file);
          await scanner.catchUp();
        }
        const tip = await rpc.call<number>('getblockcount');
        await rpc.call('invalidateblock', [await rpc.call<string>('getblockhash', [tip - 1])]);
        await activity(ltc, addrs, 400, addrs[2]);
        await ltc.mine(2, addrs[1]);
        const crashing = await openIndex(ltc, kind, file, { fault: { step } });
        await assert.rejects(crashing.scanner.catchUp(), /simulated crash/);
        const { scanner, store } = await openIndex(ltc, kind, file);
        await scanner.catchUp();
        await assertMatchesDaemon(rpc, store);
      });
    }

    it('waits for a daemon that is loading its chain below the index, but follows one that dropped blocks', async () => {
      const file = 'main';
      const before = await openIndex(ltc, kind, file);
      const tip = (await before.scanner.catchUp())!;
      // A fresh daemon of the same network is in its initial block download at height 0, as after -reindex.
      const fresh = await startLitecoind();
      try {
        const info = await fresh.rpc.call<{ initialblockdownload: boolean; blocks: number }>('getblockchaininfo');
        assert.equal(info.initialblockdownload, true);
        const { store } = await openIndex(ltc, kind, file);
        const waiting = new Scanner(rpcFor(fresh), store, { startHeight: 0, pollMs: 50, retryMs: 50, prefetch: 8, log: silent });
        assert.equal(await waiting.catchUp(), tip, 'nothing undone while the daemon loads');
        assert.equal(waiting.stats.reorgs + waiting.stats.undone, 0);
      } finally {
        await fresh.stop();
      }
      // The same daemon dropping its last block (and not loading): the index follows it down.
      await ltc.rpc.call('invalidateblock', [await ltc.rpc.call<string>('getblockhash', [tip])]);
      const { scanner, store } = await openIndex(ltc, kind, file);
      assert.equal(await scanner.catchUp(), tip - 1);
      await assertMatchesDaemon(ltc.rpc, store);
      await ltc.rpc.call('reconsiderblock', [before.store.hashAt(tip)!]);
      assert.equal(await scanner.catchUp(), tip);
      await assertMatchesDaemon(ltc.rpc, store);
    });

    it('rolls back to a height exactly, and rebuilds when asked below the kept undo records', async () => {
      const { scanner, store } = await openIndex(ltc, kind, 'rescan', { undoDepth: 20 });
      const tip = (await scanner.catchUp())!;
      assert.equal(store.lowestUndoTarget(), tip - 20);
      await scanner.rollbackTo(tip - 15);
      assert.equal(store.tip()!.height, tip - 15);
      await scanner.catchUp();
      await assertMatchesDaemon(ltc.rpc, store);
      await scanner.rollbackTo(tip - 100);
      assert.equal(store.tip(), null, 'below the undo records: dropped, to be rebuilt from the start height');
      await scanner.catchUp();
      await assertMatchesDaemon(ltc.rpc, store);
    });

    it('indexes from a configured start height only', async () => {
      const start = 150;
      const { scanner, store } = await openIndex(ltc, kind, 'start', { startHeight: start });
      await scanner.catchUp();
      await assertMatchesDaemon(ltc.rpc, store, start);
      const { txsOf } = await chainView(ltc.rpc, start);
      for (const a of txsOf.keys()) for (const t of await store.transactions(a)) assert.ok(t.height >= start);
    });

    it('gathers blocks into runs of at most batchRows rows while catching up; a new block at the tip is written at once', async () => {
      const { scanner, store } = await openIndex(ltc, kind, 'batches', { prefetch: 8, batchRows: 100 });
      const runs = recordRuns(store);
      await scanner.catchUp();
      await assertMatchesDaemon(ltc.rpc, store);
      const rows = runs.reduce((n, r) => n + r.rows, 0);
      assert.ok(runs.every((r) => r.rows <= 100 || r.blocks === 1), JSON.stringify(runs));
      assert.ok(runs.length >= Math.ceil(rows / 100) && runs.length <= 2 * Math.ceil(rows / 100) + 1, `${runs.length} runs for ${rows} rows`);
      // Gathered across takes of the look-ahead (8 blocks): the chain starts with 100 blocks of one output each.
      assert.ok(Math.max(...runs.map((r) => r.blocks)) > 8, JSON.stringify(runs));
      runs.length = 0;
      await activity(ltc, addrs, 700);
      await scanner.catchUp();
      assert.deepEqual(runs.map((r) => r.blocks), [1]);
    });

    it('near the end of a catch-up, hands a run over once it holds as many rows as the rest: the runs shrink by halves', async () => {
      // Neither the size nor the time limit splits runs here: only the rule for the end of a catch-up does.
      const { scanner, store } = await openIndex(ltc, kind, 'tail', { prefetch: 8, batchRows: 1e9, batchMs: 1e9, tailMinRows: 1 });
      const runs = recordRuns(store);
      await scanner.catchUp();
      await assertMatchesDaemon(ltc.rpc, store);
      const blocks = runs.reduce((n, r) => n + r.blocks, 0);
      const rows = runs.reduce((n, r) => n + r.rows, 0);
      // One run of every block without the rule. With it, the first run goes when it holds about half of the
      // blocks, and the last holds about what one block has on average, and fewer rows than an eighth: the
      // chain's last blocks may be ones with a single output (mined by earlier tests), gathered whole.
      assert.ok(runs.length >= 4 && runs[0].blocks >= blocks / 4 && runs.at(-1)!.rows <= rows / 8, JSON.stringify(runs));
    });

    it('follows the tip in the background and stops cleanly', async () => {
      const { scanner, store } = await openIndex(ltc, kind, 'main');
      scanner.start();
      const until = async (cond: () => Promise<boolean>) => {
        for (let i = 0; i < 400 && !(await cond()); i++) await new Promise((r) => setTimeout(r, 25));
        assert.ok(await cond());
      };
      const daemonTip = () => ltc.rpc.call<number>('getblockcount');
      await until(async () => store.tip()?.height === (await daemonTip()));
      await activity(ltc, addrs, 500);
      await until(async () => store.tip()?.height === (await daemonTip()));
      await scanner.stop();
      assert.equal(scanner.running, false);
      await ltc.mine(2);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(store.tip()!.height, (await daemonTip()) - 2, 'a stopped scanner stays stopped');
      scanner.start();
      await until(async () => store.tip()?.height === (await daemonTip()));
      await scanner.stop();
      await assertMatchesDaemon(ltc.rpc, store);
    });
  });
});
