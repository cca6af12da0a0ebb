/**
 * The name table serves another daemon build: `daemon.methods` points spec names at other methods. Here it
 * points litecoind's wallet-bearing calls at the routes that must strip wallet fields, and a list call at the
 * route that slices with `limit`, so those behaviours are proven on real answers.
 */
import assert from 'node:assert/strict';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import type { TestNode } from '../support/node.ts';
import { OPERATOR, authAs, ok, startDaemonNode } from './support.ts';

describe('daemon method table: another build behind the same routes (real litecoind)', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode;
  const direct = (method: string, params: unknown[] = []) => ltc.rpc.call<any>(method, params);

  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(110);
    for (let i = 0; i < 3; i++) await direct('sendtoaddress', [ltc.miner, 0.1]);
    node = await startDaemonNode(ltc, {
      cache: { ttlMs: 0, blockTtlMs: 0 },
      methods: { getinfo: 'getwalletinfo', validateaddress: 'getaddressinfo', listcorenodes: 'getrawmempool', getcorenodestatus: 'getblockcount' },
    });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      await ltc?.stop();
    }
  });

  it('relays a spec name under the configured daemon method', async () => {
    assert.equal(ok(await node.get('/daemon/getcorenodestatus')), 110);
    assert.equal(ok(await node.get('/daemon/getlegacynodestatus')), 110);
  });

  it('getinfo never shows wallet fields (the node has no wallet)', async () => {
    const wallet = await direct('getwalletinfo');
    assert.ok('balance' in wallet && 'keypoolsize' in wallet);
    for (const headers of [undefined, authAs(OPERATOR)]) {
      const info = ok(await node.get('/daemon/getinfo', headers));
      for (const k of ['balance', 'walletversion', 'keypoololdest', 'keypoolsize', 'paytxfee', 'unlocked_until']) assert.equal(k in info, false, k);
      assert.equal(info.walletname, wallet.walletname);
    }
  });

  it('validateaddress shows wallet fields to the operator only', async () => {
    const full = await direct('getaddressinfo', [ltc.miner]);
    assert.equal(full.ismine, true);
    const anon = ok(await node.get(`/daemon/validateaddress/${ltc.miner}`));
    assert.equal('ismine' in anon || 'iswatchonly' in anon || 'pubkey' in anon, false);
    assert.equal(anon.address, ltc.miner);
    assert.deepEqual(ok(await node.get(`/daemon/validateaddress/${ltc.miner}`, authAs(OPERATOR))), full);
  });

  it('listcorenodes keeps the first `limit` entries', async () => {
    const all = await direct('getrawmempool');
    assert.equal(all.length, 3);
    assert.deepEqual(ok(await node.get('/daemon/listcorenodes')), all);
    assert.deepEqual(ok(await node.get('/daemon/listcorenodes?limit=2')), all.slice(0, 2));
    assert.deepEqual(ok(await node.get('/daemon/listlegacynodes?limit=1')), all.slice(0, 1));
  });
});
