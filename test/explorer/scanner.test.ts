/**
 * The scanner and the nedb index against a real litecoind in regtest: a few hundred blocks with payments
 * between several addresses, reorganisations forced with `invalidateblock`, and crashes at every write
 * step of a block (the store is opened again from its file, as after kill -9). After each, every address's
 * balance and unspent outputs equal the daemon's `scantxoutset`.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { tempDir } from '../support/node.ts';
import { Scanner } from '../../plugins/explorer/scanner.ts';
import { activity, assertMatchesDaemon, chainView, indexFile, openIndex, rpcFor, silent, walletAddresses } from './support.ts';

describe('explorer scanner on a real chain', function () {
  this.timeout(180_000);
  let ltc: Regtest;
  let dir: string;
  let addrs: string[];

  before(async () => {
    ltc = await startLitecoind();
    dir = tempDir('corenode-explorer-');
    addrs = await walletAddresses(ltc, 6);
    await ltc.mine(101, addrs[0]);
    for (let i = 0; i < 40; i++) await activity(ltc, addrs, i);
    await ltc.mine(60, addrs[3]);
    for (let i = 40; i < 60; i++) await activity(ltc, addrs, i);
  });
  after(async () => {
    await ltc?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('indexes every block and matches the daemon for every address (balances, unspent outputs, transactions)', async () => {
    const { scanner, store } = openIndex(ltc, indexFile(dir, 'main.db'));
    const tip = await scanner.catchUp();
    assert.equal(tip, await ltc.rpc.call<number>('getblockcount'));
    assert.ok(tip! >= 220);
    const seen = await assertMatchesDaemon(ltc.rpc, store);
    assert.ok(seen.addresses >= 7 && seen.utxos > 100, JSON.stringify(seen));
    assert.ok(scanner.stats.txs > scanner.stats.blocks, 'blocks carried payments');
  });

  it('resumes from the file after a restart without counting anything twice', async () => {
    const file = indexFile(dir, 'main.db');
    await activity(ltc, addrs, 61);
    const { scanner, store } = openIndex(ltc, file);
    await scanner.catchUp();
    assert.equal(scanner.stats.blocks, 1);
    await assertMatchesDaemon(ltc.rpc, store);
  });

  it('rolls back a reorganisation to the fork and applies the new branch (longer, equal and shorter)', async () => {
    const file = indexFile(dir, 'main.db');
    const { scanner, store } = openIndex(ltc, file);
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
      const file = indexFile(dir, `crash-${step}.db`);
      fs.copyFileSync(indexFile(dir, 'main.db'), file);
      for (let i = 0; i < 3; i++) await activity(ltc, addrs, 300 + i);
      let armed = true;
      const crashing = openIndex(ltc, file, {
        faultAt: (s) => {
          if (armed && s === step) {
            armed = false;
            throw new Error(`simulated crash after ${s}`);
          }
        },
      });
      await assert.rejects(crashing.scanner.catchUp(), /simulated crash/);
      // A new process: the same file read again.
      const { scanner, store } = openIndex(ltc, file);
      await scanner.catchUp();
      await assertMatchesDaemon(ltc.rpc, store);
    });
  }

  for (const step of ['undo-marked', 'reverted'] as const) {
    it(`recovers from a crash during a reorg's undo ("${step}")`, async () => {
      const file = indexFile(dir, `crash-${step}.db`);
      const rpc = ltc.rpc;
      {
        const { scanner } = openIndex(ltc, file);
        await scanner.catchUp();
      }
      const tip = await rpc.call<number>('getblockcount');
      await rpc.call('invalidateblock', [await rpc.call<string>('getblockhash', [tip - 1])]);
      await activity(ltc, addrs, 400, addrs[2]);
      await ltc.mine(2, addrs[1]);
      let armed = true;
      const crashing = openIndex(ltc, file, {
        faultAt: (s) => {
          if (armed && s === step) {
            armed = false;
            throw new Error(`simulated crash after ${s}`);
          }
        },
      });
      await assert.rejects(crashing.scanner.catchUp(), /simulated crash/);
      const { scanner, store } = openIndex(ltc, file);
      await scanner.catchUp();
      await assertMatchesDaemon(rpc, store);
    });
  }

  it('waits for a daemon that is loading its chain below the index, but follows one that dropped blocks', async () => {
    const file = indexFile(dir, 'main.db');
    const before = openIndex(ltc, file);
    const tip = (await before.scanner.catchUp())!;
    // A fresh daemon of the same network is in its initial block download at height 0, as after -reindex.
    const fresh = await startLitecoind();
    try {
      const info = await fresh.rpc.call<{ initialblockdownload: boolean; blocks: number }>('getblockchaininfo');
      assert.equal(info.initialblockdownload, true);
      const { store } = openIndex(ltc, file);
      const waiting = new Scanner(rpcFor(fresh), store, { startHeight: 0, pollMs: 50, retryMs: 50, prefetch: 8, log: silent });
      assert.equal(await waiting.catchUp(), tip, 'nothing undone while the daemon loads');
      assert.equal(waiting.stats.reorgs + waiting.stats.undone, 0);
    } finally {
      await fresh.stop();
    }
    // The same daemon dropping its last block (and not loading): the index follows it down.
    await ltc.rpc.call('invalidateblock', [await ltc.rpc.call<string>('getblockhash', [tip])]);
    const { scanner, store } = openIndex(ltc, file);
    assert.equal(await scanner.catchUp(), tip - 1);
    await assertMatchesDaemon(ltc.rpc, store);
    await ltc.rpc.call('reconsiderblock', [before.store.hashAt(tip)!]);
    assert.equal(await scanner.catchUp(), tip);
    await assertMatchesDaemon(ltc.rpc, store);
  });

  it('rolls back to a height exactly, and rebuilds when asked below the kept undo records', async () => {
    const file = indexFile(dir, 'rescan.db');
    const { scanner, store } = openIndex(ltc, file, { undoDepth: 20 });
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
    const { scanner, store } = openIndex(ltc, indexFile(dir, 'start.db'), { startHeight: start });
    await scanner.catchUp();
    await assertMatchesDaemon(ltc.rpc, store, start);
    const { txsOf } = await chainView(ltc.rpc, start);
    for (const a of txsOf.keys()) for (const t of await store.transactions(a)) assert.ok(t.height >= start);
  });

  it('follows the tip in the background and stops cleanly', async () => {
    const { scanner, store } = openIndex(ltc, indexFile(dir, 'main.db'));
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
