/**
 * Bad input never reaches the daemon: the node points at a closed port, so any call that got through would
 * answer "daemon unreachable"; every case here must instead be a clear envelope error (or a wire 413/404),
 * never a 500 or a hang.
 */
import assert from 'node:assert/strict';
import { freePort } from '../support/ports.ts';
import type { TestNode } from '../support/node.ts';
import { OPERATOR, authAs, err, startDaemonNode } from './support.ts';

const HASH = 'ab'.repeat(32);
const enc = encodeURIComponent;

describe('daemon bad input', function () {
  this.timeout(60_000);
  let node: TestNode;

  before(async () => {
    node = await startDaemonNode({ url: `http://127.0.0.1:${await freePort()}/`, user: 'u', password: 'p' });
  });
  after(() => node?.close());

  /** A validation refusal: envelope code 400 at HTTP 200, naming the parameter. */
  async function refused(answer: Promise<{ status: number; json: any; text: string }>, pattern: RegExp) {
    const a = await answer;
    assert.equal(a.status, 200, a.text);
    const e = err(a);
    assert.equal(e.code, 400, a.text);
    assert.equal(e.name, 'ValidationError', a.text);
    assert.match(e.message, pattern);
  }

  it('calls that pass validation reach the daemon, which is unreachable: one clear error', async () => {
    const e = err(await node.get('/daemon/getblockcount'));
    assert.equal(e.code, 503);
    assert.equal(e.name, 'DaemonUnreachable');
    assert.match(e.message, /daemon is unreachable/);
    assert.equal(err(await node.get(`/daemon/getblock/${HASH}`)).name, 'DaemonUnreachable');
  });

  it('missing required parameters', async () => {
    await refused(node.get('/daemon/getblock'), /hashheight is required/);
    await refused(node.get(`/daemon/gettxout/${HASH}`), /n is required/);
    await refused(node.get('/daemon/getblockhash'), /index is required/);
    await refused(node.post('/daemon/createrawtransaction', { transactions: [] }), /addresses is required/);
    await refused(node.post('/daemon/decoderawtransaction', {}), /hexstring is required/);
    await refused(node.post('/daemon/getaddressbalance', {}), /addresses is required/);
    await refused(node.post('/daemon/getspentinfo', { txid: HASH }), /index is required/);
  });

  it('wrong types', async () => {
    await refused(node.get(`/daemon/getblock/${HASH}/two`), /verbosity must be an integer/);
    await refused(node.get(`/daemon/getblock/${HASH}/1.5`), /verbosity must be an integer/);
    await refused(node.get(`/daemon/getblock/${HASH}/9`), /verbosity must be at most 3/);
    await refused(node.get('/daemon/getblockhash/-1'), /index must be at least 0/);
    await refused(node.get('/daemon/getblockhash/1e3'), /index must be an integer/);
    await refused(node.get('/daemon/getblockhash/99999999999999999999'), /index must be an integer/);
    await refused(node.get(`/daemon/getblockheader/${HASH}/maybe`), /verbose must be true, false, 1 or 0/);
    await refused(node.get(`/daemon/getrawtransaction/${HASH}/yes`), /verbose must be true, false, 1 or 0/);
    await refused(node.get(`/daemon/createrawtransaction/notjson/${enc('{}')}`), /transactions is not valid JSON/);
    await refused(node.get(`/daemon/createrawtransaction/${enc('{}')}/${enc('{}')}`), /transactions must be a JSON array/);
    await refused(node.get(`/daemon/getblocktemplate/${enc('[1]')}`), /jsonrequestobject must be a JSON object/);
    await refused(node.post('/daemon/decoderawtransaction', { hexstring: 1234 }), /hexstring must be a string/);
    await refused(node.post('/daemon/createmultisig', { n: 'two', keys: ['a'] }), /n must be an integer/);
    await refused(node.post('/daemon/createmultisig', { n: 1, keys: 'a,,b' }), /keys must be a list of strings/);
    await refused(node.post('/daemon/createmultisig', { n: 1, keys: [1, 2] }), /keys must be a list of strings/);
    await refused(node.post('/daemon/sendrawtransaction', [HASH]), /body must be a JSON object/);
    await refused(node.post('/daemon/sendrawtransaction', 'null'), /body must be a JSON object/);
    await refused(node.get('/daemon/listcorenodes?limit=0'), /limit must be a whole number/);
    await refused(node.get('/daemon/listcorenodes?limit=12345678'), /limit must be a whole number/);
    await refused(node.get('/daemon/addnode/1.2.3.4/delete', authAs(OPERATOR)), /command must be one of add, remove, onetry/);
    await refused(node.get('/daemon/setban/1.2.3.4/add/soon', authAs(OPERATOR)), /bantime must be an integer/);
  });

  it('a body that is not JSON is a clear error; an application/json body is answered, never left hanging', async () => {
    const a = await node.post('/daemon/decodescript', '{"hex": ');
    assert.equal(err(a).code, 400);
    assert.match(err(a).message, /not valid JSON/);
    await refused(node.post('/daemon/decodescript', { hex: 'zz' }, { 'content-type': 'application/json' }), /hex is not in the expected form/);
  });

  it('oversized values and bodies', async () => {
    await refused(node.post('/daemon/decodescript', { hex: 'ab'.repeat(20_001) }), /hex is longer than 40000 characters/);
    await refused(node.post('/daemon/verifymessage', { coreaddress: 'Q1', signature: 'c2ln', message: 'm'.repeat(60_001) }), /message is longer/);
    await refused(node.get(`/daemon/gettxoutproof/${Array(101).fill(HASH).join(',')}`), /txids has more than 100 items/);
    await refused(node.post('/daemon/createmultisig', { n: 1, keys: Array(21).fill('ab') }), /keys has more than 20 items/);
    const big = await node.post('/daemon/decodescript', JSON.stringify({ hex: 'ab'.repeat(40_000) }));
    assert.equal(big.status, 413);
    assert.equal(err(big).code, 413);
  });

  it('injection attempts in path segments are refused before the daemon', async () => {
    for (const p of [
      `/daemon/getblock/${enc('../../etc/passwd')}`,
      `/daemon/getblock/${enc("1' OR '1'='1")}`,
      `/daemon/getblock/${enc('1;stop')}`,
      `/daemon/getblock/${enc('$(reboot)')}`,
      `/daemon/getrawtransaction/${enc(HASH + '\n')}`,
      `/daemon/help/${enc('stop"]}')}`,
      `/daemon/validateaddress/${enc('<script>alert(1)</script>')}`,
      `/daemon/decoderawtransaction/${enc('{"method":"stop"}')}`,
      `/daemon/gettxoutproof/${enc(HASH + ',x')}`,
      `/daemon/getaddressbalance/${enc('Qa,{"$ne":1}')}`,
    ])
      await refused(node.get(p), /is not in the expected form|must be|is longer than/);
    await refused(node.get(`/daemon/addnode/${enc('1.2.3.4;rm -rf /')}/add`, authAs(OPERATOR)), /node is not in the expected form/);
    await refused(node.get(`/daemon/setban/${enc('1.2.3.4 || true')}/add`, authAs(OPERATOR)), /ip is not in the expected form/);
  });

  it('serves no wallet or shielded-pool call: their paths answer code 410 (removed in 8.19.0)', async () => {
    for (const p of ['/daemon/getbalance', '/daemon/getnewaddress', '/daemon/sendtoaddress/x/1', '/daemon/dumpprivkey/x', '/daemon/signrawtransaction/00', '/daemon/fundrawtransaction/00', '/daemon/listunspent', '/daemon/gettransaction/x', '/daemon/zgetbalance/x', '/daemon/zvalidateaddress/x', '/daemon/getwalletinfo', '/daemon/getlegacynodeoutputs']) {
      const a = await node.get(p, authAs(OPERATOR));
      assert.equal(a.status, 200, p);
      const e = err(a);
      assert.deepEqual([e.code, e.name], [410, 'Gone'], p);
      assert.match(e.message, /removed in 8\.19\.0/, p);
    }
    assert.equal(err(await node.post('/daemon/sendmany', {})).code, 410);
    assert.equal((await node.get('/daemon/nosuchcall')).status, 404);
  });
});
