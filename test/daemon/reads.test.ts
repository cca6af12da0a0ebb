/**
 * Every routed read, called through the node and compared with the same call made straight to a real
 * litecoind; calls this daemon lacks come back as its own "Method not found" error.
 */
import assert from 'node:assert/strict';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import type { TestNode } from '../support/node.ts';
import { err, ok, startDaemonNode } from './support.ts';

const enc = encodeURIComponent;

describe('daemon reads against a real litecoind', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode;
  let hashes: string[];
  let paid: string; // a confirmed transaction paying `payee`
  let pending: string; // a transaction still in the memory pool
  let payee: string;

  /** The same call straight to the daemon. */
  const direct = (method: string, params: unknown[] = []) => ltc.rpc.call<any>(method, params);
  /** Node answer equals the daemon's own answer, minus fields that move between two calls. */
  async function same(path: string, method: string, params: unknown[] = [], drop: string[] = []) {
    const strip = (v: any) => {
      if (v && typeof v === 'object' && !Array.isArray(v)) for (const k of drop) delete v[k];
      return v;
    };
    const got = ok(await node.get(path));
    assert.deepEqual(strip(got), strip(await direct(method, params)), path);
    return got;
  }

  /** Node answers the daemon's own error for this call. */
  async function sameError(path: string, method: string, params: unknown[] = []) {
    const e = err(await node.get(path));
    await assert.rejects(direct(method, params), (d: any) => {
      assert.equal(e.code, d.code, path);
      assert.equal(e.message, d.message, path);
      return true;
    });
  }

  before(async () => {
    ltc = await startLitecoind();
    hashes = await ltc.mine(110);
    payee = await direct('getnewaddress', ['', 'legacy']);
    paid = await direct('sendtoaddress', [payee, 1.5]);
    await ltc.mine(1);
    pending = await direct('sendtoaddress', [payee, 0.25]);
    hashes = [...hashes, await direct('getbestblockhash')];
    // No cache: every answer must be the daemon's current one (the cache has its own tests).
    node = await startDaemonNode(ltc, { cache: { ttlMs: 0, blockTtlMs: 0 } });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      await ltc?.stop();
    }
  });

  it('help, whole and for one call (path or query)', async () => {
    await same('/daemon/help', 'help', ['']);
    await same('/daemon/help/getblock', 'help', ['getblock']);
    await same('/daemon/help?command=getblockcount', 'help', ['getblockcount']);
  });

  it('chain state: best hash, count, chain info, tips, difficulty', async () => {
    await same('/daemon/getbestblockhash', 'getbestblockhash');
    await same('/daemon/getblockcount', 'getblockcount');
    await same('/daemon/getblockchaininfo', 'getblockchaininfo', [], ['verificationprogress', 'size_on_disk']);
    await same('/daemon/getchaintips', 'getchaintips');
    await same('/daemon/getdifficulty', 'getdifficulty');
  });

  it('blocks by hash and by height, with each verbosity; hashes and headers', async () => {
    const h = hashes[5];
    await same(`/daemon/getblock/${h}`, 'getblock', [h, 2]);
    await same(`/daemon/getblock/${h}/0`, 'getblock', [h, 0]);
    await same(`/daemon/getblock/${h}?verbosity=1`, 'getblock', [h, 1]);
    await same('/daemon/getblock/6', 'getblock', [h, 2]);
    await same('/daemon/getblock/6/1', 'getblock', [h, 1]);
    await same('/daemon/getblockhash/6', 'getblockhash', [6]);
    await same('/daemon/getblockhash?index=0', 'getblockhash', [0]);
    await same(`/daemon/getblockheader/${h}`, 'getblockheader', [h, true]);
    await same(`/daemon/getblockheader/${h}/false`, 'getblockheader', [h, false]);
    await same(`/daemon/getblockheader/${h}/0`, 'getblockheader', [h, false]);
  });

  it('memory pool and unspent outputs', async () => {
    await same('/daemon/getmempoolinfo', 'getmempoolinfo');
    assert.deepEqual(await same('/daemon/getrawmempool', 'getrawmempool', [false]), [pending]);
    await same('/daemon/getrawmempool/true', 'getrawmempool', [true]);
    const tx = await direct('getrawtransaction', [paid, true]);
    const n = tx.vout.find((o: any) => o.scriptPubKey.addresses?.includes(payee) || o.scriptPubKey.address === payee).n;
    await same(`/daemon/gettxout/${paid}/${n}`, 'gettxout', [paid, n, true]);
    await same(`/daemon/gettxout/${paid}/${n}/false`, 'gettxout', [paid, n, false]);
    await same('/daemon/gettxoutsetinfo', 'gettxoutsetinfo');
  });

  it('transaction proofs, made and verified', async () => {
    const proof = await same(`/daemon/gettxoutproof/${paid}`, 'gettxoutproof', [[paid]]);
    await same(`/daemon/gettxoutproof/${paid}/${hashes.at(-1)}`, 'gettxoutproof', [[paid], hashes.at(-1)]);
    assert.deepEqual(await same(`/daemon/verifytxoutproof/${proof}`, 'verifytxoutproof', [proof]), [paid]);
  });

  it('raw transactions by id, plain and verbose', async () => {
    await same(`/daemon/getrawtransaction/${paid}`, 'getrawtransaction', [paid, 0]);
    await same(`/daemon/getrawtransaction/${paid}/1`, 'getrawtransaction', [paid, 1]);
    await same(`/daemon/getrawtransaction/${paid}/true`, 'getrawtransaction', [paid, 1]);
  });

  it('mining: info, hash rate, block template', async () => {
    await same('/daemon/getmininginfo', 'getmininginfo');
    await same('/daemon/getnetworkhashps', 'getnetworkhashps', [120, -1]);
    await same('/daemon/getnetworkhashps/10/50', 'getnetworkhashps', [10, 50]);
    // A regtest daemon without peers refuses templates: its own error comes back, as it is.
    const request = { rules: ['mweb', 'segwit'] };
    await sameError(`/daemon/getblocktemplate/${enc(JSON.stringify(request))}`, 'getblocktemplate', [request]);
    await sameError('/daemon/getblocktemplate', 'getblocktemplate');
  });

  it('network: connections, totals, info, peers, bans', async () => {
    await same('/daemon/getconnectioncount', 'getconnectioncount');
    const totals = ok(await node.get('/daemon/getnettotals'));
    assert.deepEqual(Object.keys(totals).sort(), Object.keys(await direct('getnettotals')).sort());
    await same('/daemon/getnetworkinfo', 'getnetworkinfo', [], ['timeoffset']);
    await same('/daemon/getpeerinfo', 'getpeerinfo');
    await same('/daemon/listbanned', 'listbanned');
  });

  it('addresses and messages: validate, verify, multisig', async () => {
    await same(`/daemon/validateaddress/${payee}`, 'validateaddress', [payee]);
    await same('/daemon/validateaddress/notanaddress', 'validateaddress', ['notanaddress']);
    const message = 'corenode says: hello / world + more?';
    const signature = await direct('signmessage', [ltc.miner, message]);
    assert.equal(await same(`/daemon/verifymessage/${ltc.miner}/${enc(signature)}/${enc(message)}`, 'verifymessage', [ltc.miner, signature, message]), true);
    assert.equal(ok(await node.post('/daemon/verifymessage', { coreaddress: ltc.miner, signature, message })), true);
    assert.equal(ok(await node.post('/daemon/verifymessage', { coreaddress: payee, signature, message })), false);
    const keys = [(await direct('getaddressinfo', [ltc.miner])).pubkey, (await direct('getaddressinfo', [payee])).pubkey];
    await same(`/daemon/createmultisig/2/${keys.join(',')}`, 'createmultisig', [2, keys]);
    assert.deepEqual(ok(await node.post('/daemon/createmultisig', { n: 1, keys })), await direct('createmultisig', [1, keys]));
  });

  /** Calls this daemon build lacks: relayed under the daemon's own method name, its error returned. */
  const missing: [string, string][] = [
    ['/daemon/getinfo', 'getinfo'],
    ['/daemon/getcorenodestatus', 'getlegacynodestatus'],
    ['/daemon/getlegacynodestatus', 'getlegacynodestatus'],
    ['/daemon/listcorenodes', 'listcorenodes'],
    ['/daemon/listlegacynodes/abc?limit=5', 'listcorenodes'],
    ['/daemon/viewdeterministiccorenodelist', 'viewdeterministiclegacynodelist'],
    ['/daemon/viewdeterministiclegacynodelist/x', 'viewdeterministiclegacynodelist'],
    ['/daemon/getcorenodecount', 'getlegacynodecount'],
    ['/daemon/getlegacynodecount', 'getlegacynodecount'],
    ['/daemon/getdoslist', 'getdoslist'],
    ['/daemon/getstartlist', 'getstartlist'],
    ['/daemon/corenodecurrentwinner', 'legacynodecurrentwinner'],
    [`/daemon/getblockdeltas/${'ab'.repeat(32)}`, 'getblockdeltas'],
    ['/daemon/getblockhashes/2000000000/1000000000/true/false', 'getblockhashes'],
    [`/daemon/getspentinfo/${'ab'.repeat(32)}/0`, 'getspentinfo'],
    ['/daemon/getblocksubsidy/100', 'getblocksubsidy'],
    ['/daemon/getlocalsolps', 'getlocalsolps'],
    ['/daemon/getnetworksolps', 'getnetworksolps'],
    ['/daemon/getdeprecationinfo', 'getdeprecationinfo'],
    ['/daemon/estimatefee/6', 'estimatefee'],
    ['/daemon/estimatepriority/6', 'estimatepriority'],
    ['/daemon/getaddresstxids/QSomeAddress1/1/100', 'getaddresstxids'],
    ['/daemon/getaddressbalance/QSomeAddress1,QOther2', 'getaddressbalance'],
    ['/daemon/getaddressdeltas/QSomeAddress1/1/100/true', 'getaddressdeltas'],
    ['/daemon/getaddressutxos/QSomeAddress1/true', 'getaddressutxos'],
    ['/daemon/getaddressmempool?address=QSomeAddress1', 'getaddressmempool'],
    ['/daemon/getbenchmarks', 'getbenchmarks'],
    ['/daemon/getbenchstatus', 'getbenchstatus'],
  ];
  for (const [path, method] of missing)
    it(`${path}: the daemon's own "Method not found" (${method})`, async () => {
      const e = err(await node.get(path));
      await assert.rejects(direct(method), (d: any) => {
        assert.deepEqual(e, { code: d.code, name: 'MethodNotFound', message: d.message });
        return true;
      });
      assert.equal(e.code, -32601);
    });

  it('POST forms of the address-index and spent-info calls reach the daemon too', async () => {
    for (const [path, body] of [
      ['/daemon/getaddresstxids', { addresses: ['QSomeAddress1'], start: 1, end: 5 }],
      ['/daemon/getaddressbalance', { addresses: ['QSomeAddress1'] }],
      ['/daemon/getaddressdeltas', { addresses: ['QSomeAddress1'], chaininfo: true }],
      ['/daemon/getaddressutxos', { addresses: ['QSomeAddress1'] }],
      ['/daemon/getaddressmempool', { addresses: ['QSomeAddress1'] }],
      ['/daemon/getspentinfo', { txid: 'ab'.repeat(32), index: 0 }],
      ['/daemon/getblockhashes', { high: 2, low: 1, noorphans: true }],
    ] as const)
      assert.equal(err(await node.post(path, body)).code, -32601, path);
  });
});
