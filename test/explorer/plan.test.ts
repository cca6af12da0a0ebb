/**
 * The run plan and its undo records, without a store: what a run writes (outputs created and spent inside
 * it never reach the store), balances past 2^53 units, and undo records read back exactly in both formats.
 */
import assert from 'node:assert/strict';
import { packUndo, planRunSync, unpackUndo, type BlockUndo } from '../../plugins/explorer/plan.ts';
import type { ParsedBlock, Utxo } from '../../plugins/explorer/store.ts';

const txid = (n: number) => n.toString(16).padStart(64, '0');
const out = (t: number, vout: number, address: string, satoshis: number, height: number): Utxo => ({
  txid: txid(t),
  vout,
  address,
  satoshis,
  height,
  scriptPubKey: `0014${address.padEnd(40, '0')}`.slice(0, 44),
  coinbase: false,
});
const block = (height: number, outputs: Utxo[], spends: [number, number, number][]): ParsedBlock => ({
  height,
  hash: `h${height}`,
  prev: `h${height - 1}`,
  outputs,
  spends: spends.map(([t, pt, pv]) => ({ txid: txid(t), prevTxid: txid(pt), prevVout: pv })),
  txCount: 1,
});
/** Records compared as plain data (an undo's outputs may be the blocks' own output objects). */
const plain = (u: BlockUndo) => ({ ...u, outputs: u.outputs.map((o) => ({ txid: o.txid, vout: o.vout })), spent: u.spent.map((o) => ({ ...o })) });

describe('explorer run plan', () => {
  it('writes what the run leaves: outputs spent inside it never reach the store, earlier ones are removed', () => {
    const held = out(1, 0, 'aa', 500, 1);
    const blocks = [
      block(2, [out(2, 0, 'bb', 100, 2), out(2, 1, 'cc', 200, 2)], [[2, 1, 0]]),
      // Spends block 2's first output and its own first output (created and spent in one block).
      block(3, [out(3, 0, 'cc', 50, 3), out(4, 0, 'dd', 7, 3)], [[3, 2, 0], [4, 3, 0]]),
    ];
    const plan = planRunSync(blocks, (keys) => (keys.some((k) => k.txid === held.txid && k.vout === 0) ? [held] : []));
    assert.deepEqual(plan.removed, [held]);
    assert.deepEqual(plan.created.map((o) => `${o.txid.slice(-1)}:${o.vout}`).sort(), ['2:1', '4:0']);
    assert.deepEqual([...plan.balances].sort(), [['aa', -500n], ['cc', 200n], ['dd', 7n]]);
    // Block 3 spent block 2's output (put back on undo) and not its own (never unspent there).
    assert.deepEqual(plan.undo[1].spent.map((o) => o.txid.slice(-1)), ['2']);
    assert.deepEqual(plan.undo[1].outputs.map((o) => `${o.txid.slice(-1)}:${o.vout}`), ['4:0']);
    assert.deepEqual(plan.undo[0].spent, [held]);
    // Each (address, transaction) pair once per block: tx 3 spends from bb and pays cc.
    assert.deepEqual(plan.undo[1].txs.map((t) => `${t.address}:${t.txid.slice(-1)}`).sort(), ['bb:3', 'cc:3', 'cc:4', 'dd:4']);
    assert.equal(plan.txs.length, plan.undo[0].txs.length + plan.undo[1].txs.length);
  });

  it('sums balances exactly past 2^53 units (a chain with a larger supply)', () => {
    const big = 2 ** 52;
    const plan = planRunSync([block(1, [out(1, 0, 'aa', big, 1), out(1, 1, 'aa', big, 1), out(1, 2, 'aa', 3, 1)], [])], () => []);
    assert.equal(plan.balances.get('aa'), 2n * BigInt(big) + 3n);
  });

  it('packs undo records compactly and reads them back exactly, and still reads the JSON records of earlier versions', () => {
    const blocks = [block(5, [out(5, 0, 'rltc1qaaa', 1, 5), out(5, 1, 'rltc1qbbb', 2, 5)], [[5, 1, 3]]), block(6, [], [[6, 5, 1]])];
    const held = { ...out(1, 3, 'rltc1qccc', 9, 1), coinbase: true };
    const plan = planRunSync(blocks, () => [held]);
    for (const u of plan.undo) {
      const text = packUndo(u);
      assert.match(text, /^2;/);
      assert.deepEqual(unpackUndo(u.height, u.hash, u.prev, text), plain(u));
      const v1 = JSON.stringify({ o: u.outputs.map((o) => [o.txid, o.vout]), t: u.txs.map((t) => [t.address, t.txid]), s: u.spent });
      assert.deepEqual(unpackUndo(u.height, u.hash, u.prev, v1), plain(u));
      assert.ok(text.length < v1.length, `${text.length} against ${v1.length}`);
    }
    const empty: BlockUndo = { height: 1, hash: 'h', prev: 'p', outputs: [], txs: [], spent: [] };
    assert.deepEqual(unpackUndo(1, 'h', 'p', packUndo(empty)), empty);
  });

  it('writes a record whose values hold its separators as JSON, read back the same', () => {
    const odd: BlockUndo = {
      height: 1,
      hash: 'h',
      prev: 'p',
      outputs: [{ txid: 'a,b', vout: 0 }],
      txs: [{ address: 'x.y', txid: 'a,b' }],
      spent: [{ txid: 'c', vout: 1, address: 'x;y', satoshis: 5, height: 0, scriptPubKey: '', coinbase: true }],
    };
    const text = packUndo(odd);
    assert.match(text, /^\{/);
    assert.deepEqual(unpackUndo(1, 'h', 'p', text), odd);
  });
});
