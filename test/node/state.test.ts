/**
 * The node state routes: DOS state (and its login gate), the node's PGP key, chain account, marketplace
 * URL, geolocation through a provider double with its cache, static IP, the backend folder for loopback
 * callers only, the adjust routes' overlay, and (against a real litecoind behind the TEST-ONLY corenode
 * RPC double) the tier from the collateral, /core/info and the availability of another node.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readKey } from 'openpgp';
import { loadConfig } from '../../core/config.ts';
import { fetchAnswer } from '../support/node.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble } from './doubles/corenode-rpc-double.ts';
import { startGeolocationDouble, type GeolocationDouble } from './doubles/geolocation-double.ts';
import { CORE_TEAM, MEMBER, OPERATOR, asOperator, authAs, err, ok, startOpsNode, tmp } from './support.ts';

describe('node state routes (no daemon)', function () {
  this.timeout(60_000);
  let geo: GeolocationDouble;
  before(async () => {
    geo = await startGeolocationDouble();
  });
  after(() => geo?.close());

  it('answers the DOS state, and a banned node fails the dos fitness check that gates login phrases', async () => {
    const dataDir = path.join(tmp('dos'), 'data');
    let node = await startOpsNode({ dataDir });
    try {
      assert.deepEqual(ok(await node.get('/core/dosstate')), { dosState: 0, dosMessage: null });
      assert.equal(ok(await node.get('/core/health')).checks.find((c: any) => c.name === 'dos').ok, true);
    } finally {
      await node.close({ keepData: true });
    }
    fs.appendFileSync(path.join(dataDir, 'node', 'state.db'), JSON.stringify({ _id: 'dos', dosState: 11, dosMessage: 'Public IP unobtainable' }) + '\n');
    node = await startOpsNode({ dataDir });
    try {
      assert.deepEqual(ok(await node.get('/core/dosstate')), { dosState: 11, dosMessage: 'Public IP unobtainable' });
      const h = ok(await node.get('/core/health'));
      assert.equal(h.healthy, false);
      assert.equal(h.checks.find((c: any) => c.name === 'dos').ok, false);
    } finally {
      await node.close();
      fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
    }
  });

  it('makes a PGP key pair at first start and keeps it across restarts', async () => {
    const dataDir = path.join(tmp('pgp'), 'data');
    let node = await startOpsNode({ dataDir });
    let first: string;
    try {
      first = ok(await node.get('/core/pgp'));
      assert.match(first, /^-----BEGIN PGP PUBLIC KEY BLOCK-----/);
      const key = await readKey({ armoredKey: first });
      assert.equal(key.isPrivate(), false);
      assert.equal(fs.statSync(path.join(dataDir, 'node', 'pgp-private.asc')).mode & 0o777, 0o600);
    } finally {
      await node.close({ keepData: true });
    }
    node = await startOpsNode({ dataDir });
    try {
      assert.equal(ok(await node.get('/core/pgp')), first);
    } finally {
      await node.close();
      fs.rmSync(path.dirname(dataDir), { recursive: true, force: true });
    }
  });

  it('answers the chain account, the marketplace URL per development flag, and null for an unknown IP', async () => {
    const node = await startOpsNode({ node: { chainAccount: { account: 'k:abc123', chainid: 3 }, development: true, marketplaceUrl: 'https://stats.example/' } });
    try {
      assert.equal(ok(await node.get('/core/chainaccount')), 'chainaccount:k:abc123?chainid=3');
      assert.equal(ok(await node.get('/core/marketplaceurl')), 'https://stats.example/marketplace/listdevapps');
      assert.equal(ok(await node.get('/core/ip')), null);
    } finally {
      await node.close();
    }
    const plain = await startOpsNode();
    try {
      assert.equal(ok(await plain.get('/core/chainaccount')), null);
      assert.equal(ok(await plain.get('/core/marketplaceurl')), 'https://stats.runoncore.io/marketplace/listapps');
    } finally {
      await plain.close();
    }
  });

  it('answers the geolocation from a provider (double), cached; static IP from the provider org', async () => {
    const broken = 'http://127.0.0.1:1/json';
    const node = await startOpsNode({ node: { geolocation: { providers: [broken, geo.url], cacheSeconds: 3600, timeoutMs: 2000 } } });
    try {
      geo.calls = 0;
      const g = ok(await node.get('/core/geolocation'));
      assert.deepEqual(g, {
        ip: '203.0.113.7', continent: 'Europe', continentCode: 'EU', country: 'Germany', countryCode: 'DE', region: 'BY',
        regionName: 'Bavaria', lat: 49.45, lon: 11.07, org: 'Hetzner Online GmbH', static: true, dataCenter: true,
      });
      await Promise.all([node.get('/core/geolocation'), node.get('/core/staticip')]);
      assert.equal(geo.calls, 1, 'answered from the cache');
      assert.equal(ok(await node.get('/core/staticip')), true);
    } finally {
      await node.close();
    }
  });

  it('says so when no provider answers or none is configured, and caches no failure', async () => {
    const node = await startOpsNode({ node: { geolocation: { providers: [geo.url], cacheSeconds: 0 } } });
    const none = await startOpsNode();
    const saved = geo.answer;
    try {
      geo.answer = null;
      const e = err(await node.get('/core/geolocation'));
      assert.deepEqual([e.code, e.name], [503, 'GeolocationUnavailable']);
      assert.match(e.message, /HTTP 502/);
      assert.equal(err(await node.get('/core/staticip')).name, 'GeolocationUnavailable');
      assert.match(err(await none.get('/core/geolocation')).message, /No geolocation provider is configured/);
    } finally {
      geo.answer = saved;
      await node.close();
      await none.close();
    }
  });

  it('answers the backend folder to loopback callers at AdminAndCoreTeam, and refuses others', async () => {
    const external = Object.values(os.networkInterfaces()).flat().find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    const node = await startOpsNode({ node: { softwareDir: '/opt/corenode-test' }, config: {} });
    try {
      assert.equal(ok(await node.get('/core/backendfolder', asOperator())), '/opt/corenode-test');
      assert.equal(ok(await node.get('/core/backendfolder', authAs(CORE_TEAM))), '/opt/corenode-test');
      assert.equal(err(await node.get('/core/backendfolder')).code, 401);
      assert.equal(err(await node.get('/core/backendfolder', authAs(MEMBER))).code, 401);
    } finally {
      await node.close();
    }
    if (!external) return;
    // The same node listening on every address, called from a non-loopback address of this machine.
    const open = await startOpsNode({ node: { softwareDir: '/opt/corenode-test' } });
    try {
      const port = await open.host.listen(0, '0.0.0.0');
      const e = err(await fetchAnswer(`http://${external}:${port}/core/backendfolder`, { headers: asOperator() }));
      assert.deepEqual([e.code, e.name], [401, 'Unauthorized']);
    } finally {
      await open.close();
    }
  });
});

describe('adjust routes: the operator overlay', function () {
  this.timeout(60_000);
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  before(async () => {
    node = await startOpsNode();
  });
  after(() => node?.close());

  it('stores router IP, API port and chain account as data, answered with a restart notice, applied at the next start', async () => {
    assert.deepEqual(ok(await node.get('/core/adjustrouterip/192.168.1.254', asOperator())), { message: 'Router IP adjusted. A restart of CoreOS is necessary' });
    assert.deepEqual(ok(await node.get('/core/adjustapiport/16137', asOperator())), { message: 'API Port adjusted. A restart of CoreOS is necessary' });
    assert.deepEqual(ok(await node.get('/core/adjustchainaccount/k:abc/7', asOperator())), { message: 'Chain account adjusted. A restart of CoreOS is necessary' });
    const file = path.join(node.dataDir, 'operator-overlay.json');
    assert.deepEqual(JSON.parse(fs.readFileSync(file, 'utf8')), { 'node.routerIp': '192.168.1.254', 'api.port': 16137, 'node.chainAccount': { account: 'k:abc', chainid: 7 } });
    const cwd = tmp('cwd');
    try {
      const cfg = loadConfig({ CORENODE_DATA_DIR: node.dataDir }, cwd);
      assert.equal(cfg.api.port, 16137);
      assert.deepEqual(cfg.node, { routerIp: '192.168.1.254', chainAccount: { account: 'k:abc', chainid: 7 } });
      assert.equal(loadConfig({ CORENODE_DATA_DIR: node.dataDir, CORENODE_PORT: '16147' }, cwd).api.port, 16147, 'env still wins');
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('refuses bad values with a clear message and leaves the overlay as it was', async () => {
    const file = path.join(node.dataDir, 'operator-overlay.json');
    const before = fs.readFileSync(file, 'utf8');
    const bad: [string, RegExp][] = [
      ['/core/adjustapiport/16128', /API Port not valid/],
      ['/core/adjustapiport/abc', /API Port not valid/],
      ['/core/adjustapiport', /No Port address specified/],
      ['/core/adjustrouterip/1.2.3', /not an IP address/],
      ['/core/adjustrouterip/%27%3Bprocess.exit()%3B%27', /not an IP address/],
      ['/core/adjustrouterip', /No ip specified/],
      ['/core/adjustchainaccount/k:abc/21', /Chain id not valid/],
      ['/core/adjustchainaccount/k%22abc/1', /Chain account not valid/],
      ['/core/adjustchainaccount', /No chain account specified/],
    ];
    for (const [p, re] of bad) {
      const e = err(await node.get(p, asOperator()));
      assert.equal(e.code, 400, p);
      assert.match(e.message, re, p);
    }
    assert.equal(fs.readFileSync(file, 'utf8'), before);
  });

  it('keeps router IP, API port and chain account to the operator (Admin)', async () => {
    const file = path.join(node.dataDir, 'operator-overlay.json');
    const before = fs.readFileSync(file, 'utf8');
    for (const who of [undefined, authAs(MEMBER), authAs(CORE_TEAM)]) {
      assert.equal(err(await node.get('/core/adjustrouterip/10.0.0.1', who)).code, 401);
      assert.equal(err(await node.get('/core/adjustapiport/16147', who)).code, 401);
      assert.equal(err(await node.get('/core/adjustchainaccount/k:x/1', who)).code, 401);
    }
    assert.equal(fs.readFileSync(file, 'utf8'), before);
  });
});

describe('node tier, info and availability (real litecoind behind the corenode RPC double)', function () {
  this.timeout(180_000);
  let ltc: Regtest;
  let rpc: CorenodeRpcDouble;
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  let other: Awaited<ReturnType<typeof startOpsNode>>;
  let collateral: { txid: string; n: number };
  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(125);
    const address = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    const txid = await ltc.rpc.call<string>('sendtoaddress', [address, 1000]);
    await ltc.mine(1);
    const tx = await ltc.rpc.call<any>('getrawtransaction', [txid, true]);
    collateral = { txid, n: tx.vout.find((o: any) => o.value === 1000).n };
    rpc = await startCorenodeRpcDouble(ltc);
    node = await startOpsNode({ withDaemon: true, daemon: { rpc: { url: rpc.url, user: ltc.user, password: ltc.password }, cache: { ttlMs: 0, blockTtlMs: 0 } } });
    other = await startOpsNode();
  });
  after(async () => {
    await node?.close();
    await other?.close();
    await rpc?.close();
    await ltc?.stop();
  });

  it('derives the tier from the collateral output of the node status', async () => {
    rpc.status = { status: 'CONFIRMED', collateral: `COutPoint(${collateral.txid}, ${collateral.n})` };
    assert.equal(ok(await node.get('/core/nodetier')), 'cumulus_new');
  });

  it('says why when there is no tier: unregistered, no collateral, spent or unknown output, odd amount', async () => {
    rpc.status = null;
    assert.match(err(await node.get('/core/nodetier')).message, /node status cannot be read.*Node not registered/);
    rpc.status = { status: 'EXPIRED', collateral: '' };
    assert.equal(err(await node.get('/core/nodetier')).name, 'NoCollateral');
    rpc.status = { collateral: `COutPoint(${'0'.repeat(64)}, 0)` };
    assert.equal(err(await node.get('/core/nodetier')).name, 'CollateralSpent');
    // A coinbase of a recent block: not mature, so never spent; its 50 coins match no tier.
    const height = await ltc.rpc.call<number>('getblockcount');
    const [coinbase] = (await ltc.rpc.call<any>('getblock', [await ltc.rpc.call('getblockhash', [height - 1]), 1])).tx;
    rpc.status = { collateral: `COutPoint(${coinbase}, 0)` };
    assert.equal(err(await node.get('/core/nodetier')).name, 'UnknownTier');
  });

  it('answers /core/info with every part, a failing part reported in its place', async () => {
    rpc.status = { status: 'CONFIRMED', collateral: `COutPoint(${collateral.txid}, ${collateral.n})` };
    const info = ok(await node.get('/core/info'));
    assert.deepEqual(info.node.status, rpc.status);
    assert.equal(info.core.legacyid, OPERATOR);
    assert.equal(info.core.version, ok(await node.get('/core/version')));
    assert.deepEqual(info.core.dos, { dosState: 0, dosMessage: null });
    assert.equal(info.core.upnp, false);
    // litecoind has no getinfo, there is no benchmark daemon, no geolocation provider: each says so in place.
    assert.equal(typeof info.daemon.info.error.message, 'string');
    assert.equal(info.benchmark.info.error.name, 'DaemonUnreachable');
    assert.equal(info.geolocation.error.name, 'GeolocationUnavailable');
    assert.equal(info.core.ip, null);
  });

  it('checks that a confirmed node answers at its address, and refuses to probe others', async () => {
    const port = Number(new URL(other.url).port);
    rpc.nodeList = [{ ip: `127.0.0.1:${port}` }];
    assert.deepEqual(ok(await node.get(`/core/checkcoreavailability/127.0.0.1/${port}`)), { message: 'Asking Core is available' });
    const notListed = err(await node.get(`/core/checkcoreavailability/127.0.0.2/${port}`));
    assert.equal(notListed.name, 'NotConfirmed');
    rpc.nodeList = [{ ip: '127.0.0.1:1' }];
    assert.equal(err(await node.get('/core/checkcoreavailability/127.0.0.1/1')).name, 'NotAvailable');
    for (const p of ['/core/checkcoreavailability', '/core/checkcoreavailability/localhost/16127', '/core/checkcoreavailability/1.2.3.400', '/core/checkcoreavailability/127.0.0.1/99999'])
      assert.equal(err(await node.get(p)).code, 400, p);
  });
});
