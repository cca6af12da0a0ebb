/**
 * The /explorer routes on a node (identity, daemon and explorer plugins) following a real litecoind:
 * each route's happy path, its level, and its bad input.
 */
import assert from 'node:assert/strict';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import type { TestNode } from '../support/node.ts';
import { bitcoinWallet } from '../identity/keys.ts';
import { login } from '../identity/node.ts';
import { activity, assertMatchesDaemon, walletAddresses } from './support.ts';
import { data, error, httpReader, startExplorerNode, synced, until } from './node.ts';

describe('explorer routes', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode;
  let addrs: string[];
  const admin = bitcoinWallet();
  const team = bitcoinWallet();
  const user = bitcoinWallet();
  const as: Record<'admin' | 'team' | 'user', Record<string, string>> = { admin: {}, team: {}, user: {} };

  before(async () => {
    ltc = await startLitecoind();
    addrs = await walletAddresses(ltc, 5);
    await ltc.mine(101, addrs[0]);
    for (let i = 0; i < 12; i++) await activity(ltc, addrs, i);
    node = await startExplorerNode(ltc, {}, { config: { initial: { legacyid: admin.legacyid }, coreTeam: [team.legacyid] } });
    for (const [k, w] of [['admin', admin], ['team', team], ['user', user]] as const) as[k] = { legacyidauth: (await login(node, w)).header };
    await synced(node, ltc);
  });
  after(async () => {
    await node?.close();
    await ltc?.stop();
  });

  it('utxo, balance and transactions (query and path forms) match the daemon for every address', async () => {
    await assertMatchesDaemon(ltc.rpc, httpReader(node, 'query'));
    await assertMatchesDaemon(ltc.rpc, httpReader(node, 'path'));
    const [u] = data(await node.get(`/explorer/utxo?address=${addrs[0]}`));
    assert.deepEqual(Object.keys(u).sort(), ['address', 'coinbase', 'confirmations', 'height', 'satoshis', 'scriptPubKey', 'txid', 'vout']);
    assert.ok(Number.isInteger(u.satoshis) && u.confirmations >= 1);
    const balance = data(await node.get(`/explorer/balance?address=${addrs[1]}`));
    assert.ok(Number.isInteger(balance) && balance > 0);
    // A valid address the chain never paid: empty answers, not errors.
    const fresh = await ltc.rpc.call<string>('getnewaddress');
    assert.deepEqual(data(await node.get(`/explorer/utxo?address=${fresh}`)), []);
    assert.equal(data(await node.get(`/explorer/balance/${fresh}`)), 0);
    assert.deepEqual(data(await node.get(`/explorer/transactions?address=${fresh}`)), { address: fresh, transactions: [] });
  });

  it('public reads need no login; bad addresses get clear envelope errors', async () => {
    for (const route of ['utxo', 'transactions', 'balance']) {
      assert.equal(error(await node.get(`/explorer/${route}`)).message, 'No address provided');
      assert.equal(error(await node.get(`/explorer/${route}?address=`)).message, 'No address provided');
      const e = error(await node.get(`/explorer/${route}?address=notanaddress`));
      assert.equal(e.code, 400);
      assert.match(e.message, /^Invalid address: notanaddress/);
      // Checksum right, network wrong: a mainnet address on a regtest daemon.
      assert.match(error(await node.get(`/explorer/${route}/1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2`)).message, /does not belong to the daemon's network/);
      assert.match(error(await node.get(`/explorer/${route}?address=${'1'.repeat(300)}`)).message, /Invalid query input/);
      assert.match(error(await node.get(`/explorer/${route}?address=${encodeURIComponent(addrs[0] + "' OR 1=1")}`)).message, /^Invalid address/);
    }
  });

  it('scannedheight and issynced report the index against the daemon (issynced needs a login)', async () => {
    const tip = await synced(node, ltc);
    assert.deepEqual(data(await node.get('/explorer/scannedheight')), { generalScannedHeight: tip });
    const anon = error(await node.get('/explorer/issynced'));
    assert.equal(anon.code, 401);
    assert.deepEqual(data(await node.get('/explorer/issynced', as.user)), { synced: true, explorerHeight: tip, daemonHeight: tip, heightDifference: 0 });
    assert.equal((await node.get('/explorer/scannedheight?x=1')).status, 400);
  });

  it('stop and restart (admin or core team; users refused)', async () => {
    for (const who of [undefined, as.user]) {
      for (const r of ['stop', 'restart', 'reindex', 'rescan?blockheight=1']) assert.equal(error(await node.get(`/explorer/${r}`, who)).code, 401, r);
    }
    assert.equal(data(await node.get('/explorer/stop', as.admin)), 'Block processing is stopped');
    const stoppedAt = data(await node.get('/explorer/scannedheight')).generalScannedHeight;
    await activity(ltc, addrs, 50);
    await ltc.mine(2);
    const behind = data(await node.get('/explorer/issynced', as.user));
    assert.equal(behind.synced, false);
    assert.equal(behind.heightDifference, 3);
    assert.equal(data(await node.get('/explorer/scannedheight')).generalScannedHeight, stoppedAt, 'a stopped explorer stays stopped');
    assert.equal(data(await node.get('/explorer/stop', as.team)), 'Block processing is stopped');
    assert.equal(data(await node.get('/explorer/restart', as.team)), 'Block processing initiated');
    await synced(node, ltc);
    await assertMatchesDaemon(ltc.rpc, httpReader(node));
  });

  it('rescan from a height: bad heights refused, then the index is exact again', async () => {
    const tip = await synced(node, ltc);
    const bad = async (q: string) => error(await node.get(`/explorer/rescan${q}`, as.admin)).message;
    assert.equal(await bad(''), 'No blockheight provided');
    assert.equal(await bad('?blockheight='), 'No blockheight provided');
    assert.match(await bad('?blockheight=abc'), /must be an integer/);
    assert.match(await bad('/1.5'), /must be an integer/);
    assert.equal(await bad('?blockheight=-1'), 'BlockHeight lower than 0');
    assert.equal(await bad(`?blockheight=${tip}`), 'Block height shall be lower than currently scanned');
    assert.equal(await bad(`/${tip + 10}`), 'Block height shall be lower than currently scanned');
    assert.equal(data(await node.get(`/explorer/rescan?blockheight=${tip - 10}`, as.admin)), `Explorer rescan from blockheight ${tip - 10} initiated`);
    await synced(node, ltc);
    await assertMatchesDaemon(ltc.rpc, httpReader(node));
    assert.equal(data(await node.get(`/explorer/rescan/${tip - 3}`, as.team)), `Explorer rescan from blockheight ${tip - 3} initiated`);
    await synced(node, ltc);
    await assertMatchesDaemon(ltc.rpc, httpReader(node));
  });

  it('reindex drops and rebuilds; concurrent operator calls are blocked, not interleaved', async () => {
    const answers = await Promise.all([1, 2, 3].map(() => node.get('/explorer/reindex', as.admin)));
    const texts = answers.map((a) => (a.json.status === 'success' ? a.json.data : a.json.data.message));
    assert.ok(texts.includes('Explorer database reindex initiated'), texts.join());
    for (const t of texts) assert.ok(t === 'Explorer database reindex initiated' || t === 'Operation blocked', t);
    await synced(node, ltc);
    await assertMatchesDaemon(ltc.rpc, httpReader(node));
  });

  it('follows the tip and a reorganisation while serving', async () => {
    await activity(ltc, addrs, 60);
    const tip = await synced(node, ltc);
    await ltc.rpc.call('invalidateblock', [await ltc.rpc.call<string>('getblockhash', [tip - 2])]);
    await activity(ltc, addrs, 61, addrs[4]);
    await ltc.mine(3, addrs[2]);
    await until(async () => {
      const s = await node.get('/explorer/issynced', as.user);
      return s.json?.data?.synced === true;
    });
    await assertMatchesDaemon(ltc.rpc, httpReader(node));
  });
});
