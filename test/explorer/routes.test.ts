/**
 * The /explorer routes on a node (identity, daemon and explorer plugins) following a real litecoind, on the
 * default store (the routes sit above the store contract, which store.test.ts and scanner.test.ts prove
 * for every store; EXPLORER_NODE_STORE=postgres runs this on PostgreSQL): each route's happy path, its level, its bad input, address spelling and paging. The node's
 * page size is 7, so every full read below walks several pages.
 */
import assert from 'node:assert/strict';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import type { TestNode } from '../support/node.ts';
import { bitcoinWallet } from '../support/wallets.ts';
import { login } from '../support/wallets.ts';
import { activity, assertMatchesDaemon, walletAddresses } from './support.ts';
import { data, error, httpReader, startExplorerNode, synced, until } from './node.ts';
import { nodeStoreKind, prepareIndex } from './stores.ts';

const PAGE = 7;

const kind = nodeStoreKind();
describe(`explorer routes (${kind.name} store)`, function () {
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
    await kind.setup();
    await prepareIndex(kind, 'routes');
    addrs = await walletAddresses(ltc, 5);
    await ltc.mine(101, addrs[0]);
    for (let i = 0; i < 12; i++) await activity(ltc, addrs, i);
    node = await startExplorerNode(ltc, { pageLimit: PAGE, store: kind.nodeConfig('routes') }, { config: { initial: { legacyid: admin.legacyid }, coreTeam: [team.legacyid] } });
    for (const [k, w] of [['admin', admin], ['team', team], ['user', user]] as const) as[k] = { legacyidauth: (await login(node, w)).header };
    await synced(node, ltc);
  });
  after(async () => {
    await node?.close();
    await kind.teardown();
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

  it('an upper-case bech32 address answers what the lower-case one does; mixed case is refused', async () => {
    const lower = addrs.find((a) => a.startsWith('rltc1'))!;
    assert.ok(lower, 'a bech32 wallet address');
    const upper = lower.toUpperCase();
    const reader = httpReader(node);
    const balance = await reader.balance(lower);
    assert.ok(Number(balance) > 0);
    for (const form of ['query', 'path'] as const) {
      const r = httpReader(node, form);
      assert.equal(await r.balance(upper), balance, `balance (${form})`);
      assert.deepEqual(await r.utxos(upper), await reader.utxos(lower), `utxo (${form})`);
    }
    const tx = data(await node.get(`/explorer/transactions?address=${upper}&limit=${PAGE}`));
    assert.equal(tx.address, lower, 'answers name the address as the index keys it');
    assert.deepEqual(tx.transactions, (await reader.transactions(lower)).slice(0, PAGE));
    const mixed = lower.slice(0, 8).toUpperCase() + lower.slice(8);
    for (const route of ['utxo', 'transactions', 'balance']) assert.match(error(await node.get(`/explorer/${route}?address=${mixed}`)).message, /^Invalid address/, route);
  });

  it('lists are paged: capped without a limit and saying so; limit, offset and cursor walk the same list', async () => {
    const a = addrs[0];
    const full = await httpReader(node).utxos(a);
    assert.ok(full.length > 3 * PAGE, `${full.length} outputs`);
    const first = await node.get(`/explorer/utxo?address=${a}`);
    assert.equal(data(first).length, PAGE);
    assert.equal(first.headers.get('x-explorer-capped'), String(PAGE));
    const u = (x: { height: number; txid: string; vout: number }) => `${x.height}:${x.txid}:${x.vout}`;
    assert.equal(first.headers.get('x-explorer-next-cursor'), u(full[PAGE - 1]));
    assert.deepEqual(data(await node.get(`/explorer/utxo/${a}?limit=5&offset=10`)), full.slice(10, 15));
    const byCursor = await node.get(`/explorer/utxo?address=${a}&limit=3&cursor=${u(full[4])}`);
    assert.deepEqual(data(byCursor), full.slice(5, 8));
    assert.equal(byCursor.headers.get('x-explorer-capped'), null, 'a page asked for is not "capped"');
    assert.equal(byCursor.headers.get('x-explorer-next-cursor'), u(full[7]));
    const last = await node.get(`/explorer/utxo?address=${a}&cursor=${u(full.at(-3)!)}`);
    assert.deepEqual(data(last), full.slice(-2));
    assert.equal(last.headers.get('x-explorer-next-cursor'), null);

    const txs = await httpReader(node).transactions(a);
    assert.ok(txs.length > PAGE);
    const page = data(await node.get(`/explorer/transactions?address=${a}&limit=4&offset=2`));
    assert.deepEqual(page.transactions, txs.slice(2, 6));
    assert.equal(page.next, `${txs[5].height}:${txs[5].txid}`);
    const after = data(await node.get(`/explorer/transactions?address=${a}&limit=2&cursor=${page.next}`));
    assert.deepEqual(after.transactions, txs.slice(6, 8));

    const bad = async (q: string) => error(await node.get(`/explorer/${q}`)).message;
    assert.match(await bad(`utxo?address=${a}&limit=0`), /Invalid query input/);
    assert.match(await bad(`utxo?address=${a}&limit=x`), /Invalid query input/);
    assert.match(await bad(`utxo?address=${a}&offset=-1`), /Invalid query input/);
    assert.match(await bad(`utxo?address=${a}&cursor=nonsense`), /Invalid query input/);
    assert.equal(await bad(`utxo?address=${a}&limit=${PAGE + 1}`), `limit must be at most ${PAGE}`);
    assert.match(await bad(`transactions?address=${a}&cursor=${u(full[0])}`), /^Invalid cursor/);
    assert.match(await bad(`utxo?address=${a}&cursor=${page.next}`), /^Invalid cursor/);
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
