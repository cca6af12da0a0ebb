/**
 * The payment watcher's rounds against a stand-in explorer (a list of transactions and a tip, counting how
 * often the list is read) and a stand-in daemon answering `getrawtransaction`: what a round reads, and that a
 * reorganisation still drops a payment. The real explorer, daemon and registry are in register-install.test.ts.
 */
import assert from 'node:assert/strict';
import { Stores } from '../../core/services/store.ts';
import type { Collection } from '../../core/plugin-api.ts';
import { PaymentWatcher, type ExplorerPayments, type Payment } from '../../plugins/apps/payments.ts';
import type { Registry } from '../../plugins/apps/registry.ts';
import type { RpcClient } from '../../plugins/daemon/api.ts';

const ADDRESS = 'mRegistryAddress';
const HASH = 'ab'.repeat(32);
/** An OP_RETURN output carrying HASH as 64 ASCII characters, as the reference's wallets write it. */
const opReturn = `6a40${Buffer.from(HASH).toString('hex')}`;

function standIns() {
  const chain = { tip: { height: 100, hash: 'h100' }, txs: [] as { txid: string; height: number }[], listings: 0 };
  const explorer: ExplorerPayments = {
    tip: () => ({ ...chain.tip }),
    transactions: async () => {
      chain.listings++;
      return chain.txs.map((t) => ({ ...t }));
    },
  };
  const rawCalls: string[] = [];
  const daemon = {
    call: async (method: string, params: unknown[]) => {
      assert.equal(method, 'getrawtransaction');
      rawCalls.push(params[0] as string);
      return { txid: params[0], vout: [{ value: 0.5, scriptPubKey: { address: ADDRESS } }, { value: 0, scriptPubKey: { hex: opReturn } }] };
    },
  } as unknown as RpcClient;
  const registry = { confirmed: [] as string[], dropped: [] as string[], known: false };
  const reg = {
    confirm: async (p: { txid: string }) => {
      if (!registry.known) return 'unknown';
      registry.confirmed.push(p.txid);
      return 'permanent';
    },
    drop: async (txid: string) => {
      registry.dropped.push(txid);
      return [HASH];
    },
  } as unknown as Registry;
  const store = new Stores(null).get('apps', 'payments') as unknown as Collection<Payment>;
  const quiet = { warn() {}, info() {} };
  const watcher = new PaymentWatcher({ store, registry: reg, address: ADDRESS, minConfirmations: 2, explorer: () => explorer, daemon: () => daemon, price: () => 0n, log: quiet });
  return { chain, rawCalls, registry, store, round: () => watcher.tick() };
}

describe('apps: the payment watcher reads the address list only when the explorer tip moves', () => {
  it('lists once per tip; a waiting payment is confirmed on a later round without listing again', async () => {
    const s = standIns();
    s.chain.txs = [{ txid: 'aa'.repeat(32), height: 100 }];
    await s.round();
    assert.equal(s.chain.listings, 1);
    assert.deepEqual(s.rawCalls, ['aa'.repeat(32)]);
    // One confirmation of two: waiting; the tip stands, so no listing and no daemon call.
    for (let i = 0; i < 5; i++) await s.round();
    assert.equal(s.chain.listings, 1);
    assert.equal(s.rawCalls.length, 1);
    // The next block: listed again; the payment has its confirmations but the registry does not know its
    // message yet (it may still arrive), so it waits, and is looked at again without a new block.
    s.chain.tip = { height: 101, hash: 'h101' };
    await s.round();
    assert.equal(s.chain.listings, 2);
    assert.deepEqual(s.registry.confirmed, []);
    s.registry.known = true;
    await s.round();
    assert.equal(s.chain.listings, 2);
    assert.deepEqual(s.registry.confirmed, ['aa'.repeat(32)]);
    assert.equal((await s.store.find({}))[0].outcome, 'permanent');
    assert.equal(s.rawCalls.length, 1, 'a known payment is never read from the daemon again');
  });

  it('a reorganisation (same height, another hash) lists again and drops the undone payment', async () => {
    const s = standIns();
    s.chain.txs = [{ txid: 'bb'.repeat(32), height: 100 }];
    await s.round();
    assert.equal((await s.store.find({})).length, 1);
    s.chain.tip = { height: 100, hash: 'h100-other' };
    s.chain.txs = [];
    await s.round();
    assert.equal(s.chain.listings, 2);
    assert.deepEqual(s.registry.dropped, ['bb'.repeat(32)]);
    assert.equal((await s.store.find({})).length, 0);
  });

  it('a round that failed while listing lists again at the same tip', async () => {
    const s = standIns();
    s.chain.txs = [{ txid: 'cc'.repeat(32), height: 100 }];
    const store = s.store as unknown as { insert: (d: Payment) => Promise<unknown> };
    const insert = store.insert.bind(store);
    let fail = true;
    store.insert = async (d) => {
      if (fail) throw new Error('disk full');
      return insert(d);
    };
    await s.round();
    assert.equal((await s.store.find({})).length, 0);
    fail = false;
    await s.round();
    assert.equal(s.chain.listings, 2);
    assert.equal((await s.store.find({})).length, 1);
  });
});
