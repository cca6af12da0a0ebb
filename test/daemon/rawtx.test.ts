/**
 * Raw transactions end to end on a real litecoind: created and decoded through the node (GET and POST),
 * signed with the test wallet straight over RPC (the node routes no wallet call), broadcast through the
 * node; blocks submitted and priorities changed by a logged-in user.
 */
import assert from 'node:assert/strict';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import type { TestNode } from '../support/node.ts';
import { MEMBER, authAs, err, ok, startDaemonNode } from './support.ts';

const enc = encodeURIComponent;

describe('daemon raw transactions against a real litecoind', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode;
  let payee: string;
  const direct = (method: string, params: unknown[] = []) => ltc.rpc.call<any>(method, params);

  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(110);
    payee = await direct('getnewaddress', ['', 'bech32']);
    node = await startDaemonNode(ltc, { cache: { ttlMs: 0, blockTtlMs: 0 } });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      await ltc?.stop();
    }
  });

  /** An unsigned transaction spending one wallet output to the payee. */
  async function unsigned() {
    const utxo = (await direct('listunspent', [1])).find((u: any) => u.amount >= 1 && u.spendable);
    const transactions = [{ txid: utxo.txid, vout: utxo.vout }];
    const addresses = { [payee]: Number((utxo.amount - 0.001).toFixed(8)) };
    return { utxo, transactions, addresses };
  }

  it('creates the same unsigned transaction as the daemon: GET path, GET query, POST', async () => {
    const { transactions, addresses } = await unsigned();
    const want = await direct('createrawtransaction', [transactions, addresses, 0]);
    assert.equal(ok(await node.get(`/daemon/createrawtransaction/${enc(JSON.stringify(transactions))}/${enc(JSON.stringify(addresses))}`)), want);
    assert.equal(ok(await node.get(`/daemon/createrawtransaction?transactions=${enc(JSON.stringify(transactions))}&addresses=${enc(JSON.stringify(addresses))}&locktime=0`)), want);
    assert.equal(ok(await node.post('/daemon/createrawtransaction', { transactions, addresses })), want);
    // An application/json body is answered too (the reference hung on it).
    assert.equal(ok(await node.post('/daemon/createrawtransaction', { transactions, addresses }, { 'content-type': 'application/json' })), want);
    const locked = await direct('createrawtransaction', [transactions, addresses, 50]);
    assert.equal(ok(await node.post('/daemon/createrawtransaction', { transactions, addresses, locktime: '50' })), locked);
  });

  it('decodes transactions and scripts as the daemon does: GET and POST', async () => {
    const { transactions, addresses } = await unsigned();
    const hex = await direct('createrawtransaction', [transactions, addresses]);
    const decoded = await direct('decoderawtransaction', [hex]);
    assert.deepEqual(ok(await node.get(`/daemon/decoderawtransaction/${hex}`)), decoded);
    assert.deepEqual(ok(await node.post('/daemon/decoderawtransaction', { hexstring: hex })), decoded);
    const script = decoded.vout[0].scriptPubKey.hex;
    const ds = await direct('decodescript', [script]);
    assert.deepEqual(ok(await node.get(`/daemon/decodescript/${script}`)), ds);
    assert.deepEqual(ok(await node.get(`/daemon/decodescript?hex=${script}`)), ds);
    assert.deepEqual(ok(await node.post('/daemon/decodescript', { hex: script })), ds);
  });

  it('broadcasts wallet-signed transactions through the node (GET and POST) and relays the daemon errors', async () => {
    const first = await unsigned();
    const hex1 = ok(await node.post('/daemon/createrawtransaction', first));
    const signed1 = await direct('signrawtransactionwithwallet', [hex1]);
    assert.equal(signed1.complete, true);
    const txid1 = ok(await node.get(`/daemon/sendrawtransaction/${signed1.hex}`));
    assert.equal(txid1, (await direct('decoderawtransaction', [signed1.hex])).txid);
    assert.ok((await direct('getrawmempool')).includes(txid1));

    // A user may change the priority of a pooled transaction.
    assert.equal(err(await node.get(`/daemon/prioritisetransaction/${txid1}/0/1000`)).code, 401);
    assert.equal(ok(await node.get(`/daemon/prioritisetransaction/${txid1}/0/1000`, authAs(MEMBER))), true);
    assert.equal((await direct('getmempoolentry', [txid1])).fees.modified > (await direct('getmempoolentry', [txid1])).fees.base, true);

    const second = await unsigned();
    const signed2 = await direct('signrawtransactionwithwallet', [ok(await node.post('/daemon/createrawtransaction', second))]);
    const txid2 = ok(await node.post('/daemon/sendrawtransaction', { hexstring: signed2.hex }));
    assert.ok((await direct('getrawmempool')).includes(txid2));

    await ltc.mine(1);
    // Sending a mined transaction again: the daemon's code and message, named.
    const again = err(await node.post('/daemon/sendrawtransaction', { hexstring: signed1.hex }));
    await assert.rejects(direct('sendrawtransaction', [signed1.hex]), (d: any) => {
      assert.deepEqual(again, { code: d.code, name: 'AlreadyInChain', message: d.message });
      return true;
    });
    // Garbage that is still hex: the daemon's own decode error.
    const bad = err(await node.get('/daemon/sendrawtransaction/00'));
    assert.equal(bad.code, -22);
    assert.equal(bad.name, 'DeserializationError');
    assert.equal(err(await node.get('/daemon/decoderawtransaction/0000')).code, -22);
  });

  it('lets a logged-in user submit a block (GET and POST); anonymous callers are refused', async () => {
    const hash = await direct('getbestblockhash');
    const block = await direct('getblock', [hash, 0]);
    assert.equal(err(await node.get(`/daemon/submitblock/${block}`)).code, 401);
    assert.equal(err(await node.post('/daemon/submitblock', { hexdata: block })).code, 401);
    assert.equal(ok(await node.get(`/daemon/submitblock/${block}`, authAs(MEMBER))), await direct('submitblock', [block]));
    assert.equal(ok(await node.post('/daemon/submitblock', { hexdata: block }, authAs(MEMBER))), 'duplicate');
    // A new block mined elsewhere (generateblock without submitting is not in 0.21): a truncated block is refused by the daemon.
    const e = err(await node.post('/daemon/submitblock', { hexdata: block.slice(0, 200) }, authAs(MEMBER)));
    assert.equal(typeof e.code, 'number');
  });
});
