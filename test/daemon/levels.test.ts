/**
 * Permission levels of every daemon route (reference levels), and the operator controls that are RPC
 * calls, run against a real litecoind by the operator and refused to everyone else.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { DEFAULT_CORE_TEAM, REPO_ROOT } from '../../core/config.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import type { TestNode } from '../support/node.ts';
import { MEMBER, OPERATOR, authAs, err, ok, startDaemonNode } from './support.ts';

const CORE_TEAM = DEFAULT_CORE_TEAM[0];
const manifest = YAML.parse(fs.readFileSync(path.join(REPO_ROOT, 'manifests/daemon.yaml'), 'utf8'));
const routes: { id: string; method?: string; path: string; level?: string }[] = manifest.routes.filter((r: any) => !r.removed);
const concrete = (p: string) => '/daemon' + p.replace(/\/:[A-Za-z]+\?/g, '');

describe('daemon permission levels and operator controls (real litecoind)', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode;
  const reached: { route: string; who?: string }[] = [];
  const direct = (method: string, params: unknown[] = []) => ltc.rpc.call<any>(method, params);

  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(20);
    node = await startDaemonNode(ltc, { cache: { ttlMs: 0, blockTtlMs: 0 } }, { onHandler: (route, caller) => reached.push({ route, who: caller.legacyid }) });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      await ltc?.stop();
    }
  });

  const send = (r: (typeof routes)[number], headers?: Record<string, string>) =>
    r.method === 'POST' ? node.post(concrete(r.path), {}, headers) : node.get(concrete(r.path), headers);

  it('refuses every non-public route to anonymous callers with code 401, before its handler runs', async () => {
    const guarded = routes.filter((r) => (r.level ?? 'public') !== 'public');
    assert.ok(guarded.length >= 15);
    for (const r of guarded) {
      const a = await send(r);
      assert.equal(a.status, 200, r.id);
      assert.deepEqual(err(a), { code: 401, name: 'Unauthorized', message: 'Unauthorized. Access denied.' }, r.id);
    }
    assert.deepEqual(reached.filter((x) => guarded.some((r) => r.id === x.route)), []);
  });

  it('refuses admin and operator-or-team routes to a plain user, and admin routes to the core team', async () => {
    for (const r of routes.filter((x) => x.level === 'admin' || x.level === 'adminandcoreteam'))
      assert.equal(err(await send(r, authAs(MEMBER))).code, 401, r.id);
    for (const r of routes.filter((x) => x.level === 'admin')) assert.equal(err(await send(r, authAs(CORE_TEAM))).code, 401, r.id);
  });

  it('lets the core team ping the peers (operator-or-team level)', async () => {
    assert.equal(ok(await node.get('/daemon/ping', authAs(CORE_TEAM))), null);
    assert.equal(ok(await node.get('/daemon/ping', authAs(OPERATOR))), null);
  });

  it('bans, lists and clears bans for the operator', async () => {
    assert.equal(ok(await node.get('/daemon/setban/10.1.2.3/add/3600', authAs(OPERATOR))), null);
    assert.equal(ok(await node.get('/daemon/setban?ip=10.9.0.0/16&command=add&bantime=1900000000&absolute=true', authAs(OPERATOR))), null);
    const banned = ok(await node.get('/daemon/listbanned'));
    assert.deepEqual(banned, await direct('listbanned'));
    assert.deepEqual(banned.map((b: any) => b.address).sort(), ['10.1.2.3/32', '10.9.0.0/16']);
    assert.equal(banned.find((b: any) => b.address === '10.9.0.0/16').banned_until, 1900000000);
    assert.equal(ok(await node.get('/daemon/setban/10.1.2.3/remove', authAs(OPERATOR))), null);
    assert.deepEqual((await direct('listbanned')).map((b: any) => b.address), ['10.9.0.0/16']);
    // Unbanning what is not banned: the daemon's own error.
    const e = err(await node.get('/daemon/setban/10.1.2.3/remove', authAs(OPERATOR)));
    assert.equal(e.code, -30);
    assert.equal(e.name, 'ClientInvalidIpOrSubnet');
    assert.equal(ok(await node.get('/daemon/clearbanned', authAs(OPERATOR))), null);
    assert.deepEqual(await direct('listbanned'), []);
  });

  it('adds, lists and removes peers for the operator; disconnecting an unknown peer is the daemon error', async () => {
    assert.equal(ok(await node.get('/daemon/addnode/127.0.0.1:1/add', authAs(OPERATOR))), null);
    const added = ok(await node.get('/daemon/getaddednodeinfo', authAs(OPERATOR)));
    assert.deepEqual(added.map((n: any) => n.addednode), ['127.0.0.1:1']);
    assert.deepEqual(added.map((n: any) => n.addednode), (await direct('getaddednodeinfo')).map((n: any) => n.addednode));
    assert.equal(err(await node.get('/daemon/addnode/127.0.0.1:1/add', authAs(OPERATOR))).code, -23);
    assert.equal(ok(await node.get('/daemon/addnode/127.0.0.1:1/remove', authAs(OPERATOR))), null);
    assert.deepEqual(await direct('getaddednodeinfo'), []);
    assert.equal(ok(await node.get('/daemon/addnode/127.0.0.1:2/onetry', authAs(OPERATOR))), null);
    assert.equal(err(await node.get('/daemon/disconnectnode/127.0.0.1:3', authAs(OPERATOR))).code, -29);
  });

  it('verifies the chain for the operator (defaults and explicit level)', async () => {
    assert.equal(ok(await node.get('/daemon/verifychain', authAs(OPERATOR))), await direct('verifychain', [3, 288]));
    assert.equal(ok(await node.get('/daemon/verifychain/4/10', authAs(OPERATOR))), true);
  });

  it('relays the node-key and benchmark controls under the daemon names (this daemon lacks them)', async () => {
    for (const p of ['/daemon/createcorenodekey', '/daemon/createlegacynodekey', '/daemon/listcorenodeconf', '/daemon/listlegacynodeconf/x'])
      assert.equal(err(await node.get(p, authAs(OPERATOR))).code, -32601, p);
    for (const p of ['/daemon/startbenchmark', '/daemon/stopbenchmark'])
      assert.equal(err(await node.get(p, authAs(CORE_TEAM))).code, -32601, p);
  });

  it('keeps validateaddress answers per caller kind (never a cached admin answer for others)', async () => {
    const addr = ltc.miner;
    const anon = ok(await node.get(`/daemon/validateaddress/${addr}`));
    const admin = ok(await node.get(`/daemon/validateaddress/${addr}`, authAs(OPERATOR)));
    assert.deepEqual(admin, await direct('validateaddress', [addr]));
    assert.equal('ismine' in anon, false);
  });
});
