/**
 * Each store on its own, with synthetic blocks (no daemon): a long run of full blocks (the SQLite store
 * commits it as several transactions of whole blocks) interrupted by a crash keeps whole blocks only, with
 * the tip at the last one, and what it holds equals a model of those blocks (outputs, and the running
 * balances); the rest then goes on top. Runs handed over while earlier ones are written (group commit) go
 * in order, and a failed one fails those queued behind it. Both write in a thread of their own, at a lower
 * priority than the node's. Blocks the chain is already the undo depth past get no undo record. An output
 * the index already holds (a duplicate coinbase) is held once, as the later block left it. An index of the
 * previous schema is migrated at open.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { ExplorerStore, ParsedBlock, Utxo } from '../../plugins/explorer/store.ts';
import { storeKinds } from './stores.ts';

const ADDRS = ['mzmRcQhtN2gJAgw8JEQEoFETdSnMcumjov', 'rltc1qw508d6qejxtdg4y5r3zarvary0c5xw7k693xs3', 'QNnYbZ3NDmYkV7XKqBsCSuSExbTRZTKuFT'];
const h = (s: string) => createHash('sha256').update(s).digest('hex');

/** Block k: 3,000 outputs over three addresses; it spends the first 500 outputs of block k-1. */
function blocks(n: number): ParsedBlock[] {
  const out: ParsedBlock[] = [];
  let prev = '';
  for (let k = 0; k < n; k++) {
    const outputs: Utxo[] = [];
    for (let i = 0; i < 3000; i++) outputs.push({ txid: h(`t${k}:${i}`), vout: i % 3, address: ADDRS[i % 3], satoshis: 1000 + i, height: k, scriptPubKey: '00', coinbase: false });
    const spends = k === 0 ? [] : Array.from({ length: 500 }, (_, i) => ({ txid: h(`t${k}:${i}`), prevTxid: h(`t${k - 1}:${i}`), prevVout: i % 3 }));
    const hash = h(`b${k}`);
    out.push({ height: k, hash, prev, outputs, spends, txCount: 3000 });
    prev = hash;
  }
  return out;
}

/** What blocks 0..tip leave: unspent outputs per address. */
function model(bs: ParsedBlock[], tip: number): Map<string, string[]> {
  const live = new Map<string, Utxo>();
  for (const b of bs.slice(0, tip + 1)) {
    for (const o of b.outputs) live.set(`${o.txid}:${o.vout}`, o);
    for (const s of b.spends) live.delete(`${s.prevTxid}:${s.prevVout}`);
  }
  const per = new Map<string, string[]>(ADDRS.map((a) => [a, []]));
  for (const o of live.values()) per.get(o.address)!.push(`${o.txid}:${o.vout}:${o.height}`);
  for (const l of per.values()) l.sort();
  return per;
}

async function assertHolds(store: ExplorerStore, bs: ParsedBlock[], tip: number) {
  const want = model(bs, tip);
  for (const a of ADDRS) {
    const got = (await store.utxos(a)).map((u) => `${u.txid}:${u.vout}:${u.height}`).sort();
    assert.deepEqual(got, want.get(a), `outputs of ${a} after block ${tip}`);
    const held = new Set(want.get(a));
    const sum = bs
      .slice(0, tip + 1)
      .flatMap((b) => b.outputs)
      .filter((o) => o.address === a && held.has(`${o.txid}:${o.vout}:${o.height}`))
      .reduce((s, o) => s + BigInt(o.satoshis), 0n);
    assert.equal(await store.balance(a), sum);
  }
}

for (const kind of storeKinds())
  describe(`explorer store with long runs (${kind.name})`, function () {
    this.timeout(120_000);
    before(() => kind.setup());
    after(() => kind.teardown());

    it('a crash in a long run keeps whole blocks only; the rest then goes on top exactly', async () => {
      const bs = blocks(12);
      // SQLite splits this run into several transactions: crash in the second. PostgreSQL writes it as one.
      const crashing = await kind.make('long', { fault: { step: 'journal', nth: kind.name === 'sqlite' ? 2 : 1 } });
      await crashing.open();
      await assert.rejects(crashing.applyBlocks(bs), /simulated crash/);
      await crashing.close();

      const store = await kind.make('long');
      const tip = await store.open();
      const at = tip?.height ?? -1;
      if (kind.name === 'sqlite') assert.ok(at >= 0 && at < bs.length - 1, `some whole blocks kept (tip ${at})`);
      else assert.equal(tip, null, 'one transaction: nothing kept');
      if (tip) assert.equal(tip.hash, bs[at].hash);
      await assertHolds(store, bs, at);
      await store.applyBlocks(bs.slice(at + 1));
      assert.equal(store.tip()!.height, bs.length - 1);
      await assertHolds(store, bs, bs.length - 1);
      await store.undoTip();
      await assertHolds(store, bs, bs.length - 2);
      await store.close();
    });

    // Linux: a thread's nice value is its own (setpriority of the calling thread), field 19 of its stat.
    if (process.platform === 'linux')
      it('writes in a thread of their own, below the priority of the node\'s thread', async () => {
        const nice = (tid: string) => Number(fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16]);
        const main = nice(String(process.pid));
        const before = new Set(fs.readdirSync('/proc/self/task'));
        const store = await kind.make('nice');
        await store.open();
        await store.applyBlocks(blocks(2));
        const started = fs.readdirSync('/proc/self/task').filter((t) => !before.has(t));
        assert.ok(
          started.some((t) => nice(t) === Math.min(19, main + 10)),
          `a thread started with nice ${Math.min(19, main + 10)}: ${started.map((t) => `${t} ${nice(t)}`).join(', ')}`,
        );
        assert.equal(nice(String(process.pid)), main, "the node's thread keeps its priority");
        await assertHolds(store, blocks(2), 1);
        await store.close();
      });

    // Several nodes may share one PostgreSQL index: one writes at a time, and a node whose idea of the tip is
    // stale is refused and carries on from the stored tip once opened again.
    if (kind.name === 'postgres')
      it('a write on top of a tip another node has moved is refused; opened again, the node carries on from there', async () => {
        const bs = blocks(4);
        const a = await kind.make('shared');
        await a.open();
        await a.applyBlocks(bs.slice(0, 2));
        const b = await kind.make('shared');
        assert.equal((await b.open())!.height, 1);
        await b.applyBlocks(bs.slice(2, 3));
        await assert.rejects(a.applyBlocks(bs.slice(2, 3)), /the stored tip is 2 \(.*\), not 1 \(.*\) as this write expects/);
        assert.equal((await a.open())!.height, 2);
        await a.applyBlocks(bs.slice(3));
        await assertHolds(a, bs, 3);
        assert.equal((await b.open())!.height, 3);
        await a.close();
        await b.close();
      });

    it('runs handed over before the earlier are written go in, in order; a failed one fails those behind it', async () => {
      const bs = blocks(8);
      // Both stores take runs while one is written (rowsAhead) and commit the queued ones together.
      assert.ok((await kind.make('ahead-probe')).rowsAhead! > 0);
      const store = await kind.make('ahead');
      await store.open();
      await Promise.all([0, 2, 4, 6].map((k) => store.applyBlocks(bs.slice(k, k + 2))));
      assert.equal(store.tip()!.height, 7);
      await assertHolds(store, bs, 7);
      await store.close();

      // The second transaction fails: its runs and every run queued behind them are refused; the index holds
      // the runs written before, whole. The first run is written alone, so the second transaction is the next.
      const crashing = await kind.make('ahead-crash', { fault: { step: 'journal', nth: 2 } });
      await crashing.open();
      await crashing.applyBlocks(bs.slice(0, 2));
      const later = [2, 4, 6].map((k) => crashing.applyBlocks(bs.slice(k, k + 2)));
      const settled = await Promise.allSettled(later);
      assert.ok(settled.every((r) => r.status === 'rejected'), JSON.stringify(settled.map((r) => r.status)));
      await crashing.close();
      const again = await kind.make('ahead-crash');
      assert.equal((await again.open())!.height, 1);
      await assertHolds(again, bs, 1);
      await again.applyBlocks(bs.slice(2));
      await assertHolds(again, bs, 7);
      await again.close();
    });

    it('an output the index already holds (a duplicate coinbase, BIP30) is held once, as the later block left it; the run goes in', async () => {
      // Mainnet has two such coinbases (blocks 91842 and 91880 repeat earlier coinbase txids); Bitcoin Core's
      // UTXO set keeps the later output. PostgreSQL writes outputs with plain inserts, so this is its fallback path.
      const coinbase = (k: number, prev: string): ParsedBlock => ({
        height: k,
        hash: h(`dup${k}`),
        prev,
        outputs: [
          { txid: h('the same coinbase'), vout: 0, address: ADDRS[0], satoshis: 5_000_000_000, height: k, scriptPubKey: '51', coinbase: true },
          { txid: h(`other${k}`), vout: 0, address: ADDRS[1], satoshis: 1000 + k, height: k, scriptPubKey: '52', coinbase: false },
        ],
        spends: [],
        txCount: 2,
      });
      const b0 = coinbase(0, '');
      const b1 = coinbase(1, b0.hash);
      const b2 = coinbase(2, b1.hash);
      const b3 = coinbase(3, b2.hash);
      const store = await kind.make('bip30');
      await store.open();
      await store.applyBlocks([b0]);
      // A run repeating an output the index holds.
      await store.applyBlocks([b1]);
      // A run whose two blocks repeat it: the later meets the earlier in the plan, both meet the index.
      await store.applyBlocks([b2, b3]);
      assert.deepEqual(store.tip(), { height: 3, hash: b3.hash });
      const held = (await store.utxos(ADDRS[0])).map((u) => `${u.txid}:${u.vout}:${u.height}`);
      assert.deepEqual(held, [`${h('the same coinbase')}:0:3`]);
      assert.deepEqual((await store.utxos(ADDRS[1])).map((u) => u.height), [0, 1, 2, 3]);
      // The blocks after them are written as usual.
      const b4 = coinbase(4, b3.hash);
      b4.outputs.shift();
      await store.applyBlocks([b4]);
      assert.deepEqual((await store.utxos(ADDRS[1])).map((u) => u.height), [0, 1, 2, 3, 4]);
      await store.close();
    });

    it('blocks the chain is already the undo depth past get no journal record; what is kept ends at the tip and undoes exactly', async () => {
      // Block k: six outputs over the three addresses, spending two of block k-1's.
      const bs: ParsedBlock[] = [];
      for (let k = 0, prev = ''; k < 40; k++) {
        const outputs = Array.from({ length: 6 }, (_, i): Utxo => ({ txid: h(`s${k}:${i}`), vout: 0, address: ADDRS[i % 3], satoshis: 100 + i, height: k, scriptPubKey: '00', coinbase: false }));
        const spends = k === 0 ? [] : [0, 1].map((i) => ({ txid: h(`s${k}:${i}`), prevTxid: h(`s${k - 1}:${i + 2}`), prevVout: 0 }));
        bs.push({ height: k, hash: h(`sb${k}`), prev, outputs, spends, txCount: 6 });
        prev = bs[k].hash;
      }
      const chain = 39;
      const store = await kind.make('deep', { undoDepth: 10 });
      await store.open();
      // Catching up, 20 blocks below a chain of 39: all of them at least 10 below it.
      await store.applyBlocks(bs.slice(0, 20), chain);
      assert.equal(store.lowestUndoTarget(), 19, 'no block kept for undo');
      await assert.rejects(store.undoTip(), /below the kept undo depth/);
      await assertHolds(store, bs, 19);
      // The rest in two runs: the blocks above 29 (the chain's height less the undo depth) are kept.
      await store.applyBlocks(bs.slice(20, 35), chain);
      assert.equal(store.lowestUndoTarget(), 29);
      await store.applyBlocks(bs.slice(35), chain);
      assert.equal(store.lowestUndoTarget(), 29);
      await store.close();

      // What was stored says the same after a restart, and the kept blocks undo exactly.
      const again = await kind.make('deep', { undoDepth: 10 });
      assert.equal((await again.open())!.height, 39);
      assert.equal(again.lowestUndoTarget(), 29);
      for (let k = 39; k > 29; k--) {
        await again.undoTip();
        await assertHolds(again, bs, k - 1);
      }
      await assert.rejects(again.undoTip(), /below the kept undo depth/);
      await again.close();

      // Records written at the tip, then a run far behind a chain that moved on: the older records go too
      // (else the journal would end below the tip, which open refuses as inconsistent).
      const moved = await kind.make('deep-moved', { undoDepth: 10 });
      await moved.open();
      await moved.applyBlocks(bs.slice(0, 10));
      assert.equal(moved.lowestUndoTarget(), -1, 'every block kept');
      await moved.applyBlocks(bs.slice(10, 15), chain);
      assert.equal(moved.lowestUndoTarget(), 14);
      await moved.close();
      const reopened = await kind.make('deep-moved', { undoDepth: 10 });
      assert.equal((await reopened.open())!.height, 14);
      assert.equal(reopened.lowestUndoTarget(), 14);
      await assertHolds(reopened, bs, 14);
      await reopened.close();
    });

    it('an index of schema 1 (balances summed per request) gets its running balances at open', async () => {
      const bs = blocks(3);
      const first = await kind.make('schema1');
      await first.open();
      await first.applyBlocks(bs);
      await first.close();
      // What schema 1 held: no balance table.
      await kind.sql('schema1', (t) => `DROP TABLE ${t('balance')}; UPDATE ${t('meta')} SET value = '1' WHERE key = 'schema'`);
      const store = await kind.make('schema1');
      assert.equal((await store.open())!.height, 2, 'kept, not rebuilt');
      await assertHolds(store, bs, 2);
      await store.undoTip();
      await assertHolds(store, bs, 1);
      await store.close();
    });
  });
