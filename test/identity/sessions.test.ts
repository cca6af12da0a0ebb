/** Session routes, levels, logout from every cache, expiry, restart, privilege check and app owners. */
import assert from 'node:assert/strict';
import { TestClock, tempDir, type TestNode } from '../support/node.ts';
import { bitcoinWallet, ethereumWallet } from '../support/wallets.ts';
import { startIdentityNode } from './node.ts';
import { login, type LoggedIn } from '../support/wallets.ts';

const admin = bitcoinWallet();
const team = bitcoinWallet();
const config = { initial: { legacyid: admin.legacyid }, coreTeam: [team.legacyid] };
const UNAUTHORIZED = { status: 'error', data: { code: 401, name: 'Unauthorized', message: 'Unauthorized. Access denied.' } };

const works = async (node: TestNode, l: LoggedIn) => (await node.get('/id/loggedsessions', { legacyidauth: l.header })).json.status === 'success';

describe('identity: sessions', () => {
  let node: TestNode;
  const clock = new TestClock();
  before(async () => {
    node = await startIdentityNode({ clock, config });
  });
  after(() => node.close());

  it('GET /id/loggedsessions lists the caller\'s own live sessions only; anonymous is 401', async () => {
    const w = ethereumWallet();
    const a = await login(node, w);
    const b = await login(node, w);
    await login(node, bitcoinWallet());
    const mine = await node.get('/legacyid/loggedsessions', { legacyidauth: a.header });
    assert.deepEqual(mine.json.data.map((s: any) => s.loginPhrase).sort(), [a.loginPhrase, b.loginPhrase].sort());
    for (const s of mine.json.data) {
      assert.deepEqual(Object.keys(s).sort(), ['createdAt', 'expireAt', 'legacyid', 'loginPhrase']);
      assert.equal(s.legacyid, w.legacyid);
      assert.equal(new Date(s.expireAt).getTime() - new Date(s.createdAt).getTime(), 14 * 24 * 3600_000);
    }
    assert.deepEqual((await node.get('/id/loggedsessions')).json, UNAUTHORIZED);
  });

  it('GET /id/logoutcurrentsession ends that session at once; the id\'s other sessions stay', async () => {
    const w = bitcoinWallet();
    const a = await login(node, w);
    const b = await login(node, w);
    assert.equal(await works(node, a), true); // now cached
    const out = await node.get('/id/logoutcurrentsession', { legacyidauth: a.header });
    assert.deepEqual(out.json, { status: 'success', data: { message: 'Successfully logged out' } });
    assert.equal(await works(node, a), false);
    assert.equal(await works(node, b), true);
    assert.deepEqual((await node.get('/legacyid/logoutcurrentsession')).json, UNAUTHORIZED);
  });

  it('GET /id/logoutallsessions ends every session of the caller\'s id, not of others', async () => {
    const w = bitcoinWallet();
    const [a, b] = [await login(node, w), await login(node, w)];
    const other = await login(node, bitcoinWallet());
    const out = await node.get('/legacyid/logoutallsessions', { legacyidauth: b.header });
    assert.equal(out.json.data.message, 'Successfully logged out all sessions');
    assert.equal(await works(node, a), false);
    assert.equal(await works(node, b), false);
    assert.equal(await works(node, other), true);
    assert.deepEqual((await node.get('/id/logoutallsessions')).json, UNAUTHORIZED);
  });

  describe('POST /id/logoutspecificsession', () => {
    it('ends one of the caller\'s own sessions', async () => {
      const w = bitcoinWallet();
      const [a, b] = [await login(node, w), await login(node, w)];
      const out = await node.post('/id/logoutspecificsession', { loginPhrase: b.loginPhrase }, { legacyidauth: a.header });
      assert.deepEqual(out.json, { status: 'success', data: { message: 'Session successfully logged out' } });
      assert.equal(await works(node, b), false);
      assert.equal(await works(node, a), true);
    });

    it('a user cannot end another id\'s session, even knowing its phrase; the answer reveals nothing', async () => {
      const victim = await login(node, bitcoinWallet());
      const attacker = await login(node, bitcoinWallet());
      const tried = await node.post('/legacyid/logoutspecificsession', { loginPhrase: victim.loginPhrase }, { legacyidauth: attacker.header, 'content-type': 'application/json' });
      const unknown = await node.post('/id/logoutspecificsession', { loginPhrase: String(clock.now()) + 'b'.repeat(40) }, { legacyidauth: attacker.header });
      assert.equal(tried.json.data.code, 404);
      assert.deepEqual(tried.json, unknown.json);
      assert.equal(await works(node, victim), true);
    });

    it('the operator may end any session; the core team may not', async () => {
      const user = await login(node, bitcoinWallet());
      const t = await login(node, team);
      assert.equal((await node.post('/id/logoutspecificsession', { loginPhrase: user.loginPhrase }, { legacyidauth: t.header })).json.data.code, 404);
      const op = await login(node, admin);
      const out = await node.post('/id/logoutspecificsession', { loginPhrase: user.loginPhrase }, { legacyidauth: op.header });
      assert.equal(out.json.status, 'success');
      assert.equal(await works(node, user), false);
    });

    it('refuses a missing or malformed phrase (400) and anonymous callers (401)', async () => {
      const l = await login(node, bitcoinWallet());
      for (const body of [{}, { loginPhrase: 'short' }, { loginPhrase: 5 }, 'not json']) {
        const r = await node.post('/id/logoutspecificsession', body, { legacyidauth: l.header });
        assert.equal(r.json.status, 'error');
        assert.equal(r.json.data.code, 400, JSON.stringify(body));
      }
      assert.deepEqual((await node.post('/id/logoutspecificsession', { loginPhrase: l.loginPhrase })).json, UNAUTHORIZED);
      assert.equal(await works(node, l), true);
    });
  });

  describe('operator routes', () => {
    it('GET /id/loggedusers lists every id\'s sessions, for the operator only', async () => {
      const u = await login(node, bitcoinWallet());
      const op = await login(node, admin);
      const all = await node.get('/id/loggedusers', { legacyidauth: op.header });
      const ids = all.json.data.map((s: any) => s.legacyid);
      assert.ok(ids.includes(u.legacyid) && ids.includes(admin.legacyid));
      assert.ok(all.json.data.every((s: any) => !('signature' in s) && !('sigDigest' in s)));
      assert.deepEqual((await node.get('/legacyid/loggedusers', { legacyidauth: u.header })).json, UNAUTHORIZED);
      const t = await login(node, team);
      assert.deepEqual((await node.get('/id/loggedusers', { legacyidauth: t.header })).json, UNAUTHORIZED);
    });

    it('GET /id/activeloginphrases lists phrases of the last 15 minutes, used and usable', async () => {
      const op = await login(node, admin);
      const fresh = (await node.get('/id/loginphrase')).json.data;
      const list = (await node.get('/id/activeloginphrases', { legacyidauth: op.header })).json.data;
      const byPhrase = new Map(list.map((p: any) => [p.loginPhrase, p]));
      assert.equal((byPhrase.get(fresh) as any).used, false);
      assert.equal((byPhrase.get(op.loginPhrase) as any).used, true);
      const p = byPhrase.get(fresh) as any;
      assert.equal(new Date(p.expireAt).getTime() - new Date(p.createdAt).getTime(), 15 * 60_000);
      clock.advance(15 * 60_000);
      const later = (await node.get('/legacyid/activeloginphrases', { legacyidauth: op.header })).json.data;
      assert.ok(!later.some((x: any) => x.loginPhrase === fresh));
      const u = await login(node, bitcoinWallet());
      assert.deepEqual((await node.get('/id/activeloginphrases', { legacyidauth: u.header })).json, UNAUTHORIZED);
    });

    it('GET /id/logoutallusers ends every session, the operator\'s and the core team\'s too', async () => {
      const u = await login(node, bitcoinWallet());
      assert.deepEqual((await node.get('/id/logoutallusers', { legacyidauth: u.header })).json, UNAUTHORIZED);
      const t = await login(node, team);
      const op = await login(node, admin);
      const out = await node.get('/legacyid/logoutallusers', { legacyidauth: op.header });
      assert.equal(out.json.data.message, 'Successfully logged out all users');
      for (const l of [u, t, op]) assert.equal(await works(node, l), false);
    });
  });

  describe('POST /id/checkprivilege', () => {
    it('answers the caller\'s level from the header', async () => {
      const cases: [string, LoggedIn | null][] = [
        ['none', null],
        ['user', await login(node, bitcoinWallet())],
        ['admin', await login(node, admin)],
        ['coreteam', await login(node, team)],
      ];
      for (const [level, l] of cases) {
        const r = await node.post('/id/checkprivilege', '', l ? { legacyidauth: l.header } : {});
        assert.deepEqual(r.json, { status: 'success', data: { message: level, privilege: level } });
      }
    });

    it('answers the level of a body {legacyid, loginPhrase, signature}; a partial body is told what is missing', async () => {
      const op = await login(node, admin);
      const r = await node.post('/legacyid/checkprivilege', { legacyid: op.legacyid, loginPhrase: op.loginPhrase, signature: op.signature });
      assert.equal(r.json.data.privilege, 'admin');
      const wrong = await node.post('/id/checkprivilege', { legacyid: op.legacyid, loginPhrase: op.loginPhrase, signature: 'x' + op.signature.slice(1) });
      assert.equal(wrong.json.data.privilege, 'none');
      const partial = await node.post('/id/checkprivilege', { legacyid: op.legacyid });
      assert.deepEqual(partial.json.data, {
        code: 400,
        name: 'ValidationError',
        message: 'Invalid body input: body: must have properties loginPhrase, signature when property legacyid is present',
      });
      const badId = await node.post('/id/checkprivilege', { legacyid: 'x', loginPhrase: op.loginPhrase, signature: op.signature });
      assert.match(badId.json.data.message, /body\.legacyid: must match pattern/);
    });
  });

  it('every identity GET route refuses a query string (HTTP 400), checkprivilege a body that is not JSON', async () => {
    const op = await login(node, admin);
    for (const p of ['loginphrase', 'emergencyphrase', 'loggedsessions', 'logoutcurrentsession', 'logoutallsessions', 'activeloginphrases', 'logoutallusers']) {
      const r = await node.get(`/id/${p}?x=1`, { legacyidauth: op.header });
      assert.equal(r.status, 400, p);
      assert.equal(r.json.data.code, 400);
    }
    // loggedusers takes its paging keys only (declared in the manifest): others are named in the refusal.
    const paged = await node.get('/id/loggedusers?x=1', { legacyidauth: op.header });
    assert.deepEqual(paged.json.data, { code: 400, name: 'ValidationError', message: 'Invalid query input: query.x: is not a known key' });
    assert.match((await node.get('/id/loggedusers?limit=1001', { legacyidauth: op.header })).json.data.message, /query\.limit: must be <= 1000/);
    assert.equal(await works(node, op), true, 'the refused logout routes did not run');
    const bad = await node.post('/id/checkprivilege', '{legacyid:', { legacyidauth: op.header });
    assert.equal(bad.json.data.code, 400);
  });

  it('a session ends after 14 days (sessionTtlHours shortens it)', async () => {
    const l = await login(node, bitcoinWallet());
    clock.advance(14 * 24 * 3600_000 - 1);
    assert.equal(await works(node, l), true);
    clock.advance(1);
    assert.equal(await works(node, l), false);
    const short = await startIdentityNode({ clock, config: { ...config, identity: { sessionTtlHours: 1 } } });
    try {
      const s = await login(short, bitcoinWallet());
      assert.equal(new Date(s.answer.data.expireAt).getTime() - new Date(s.answer.data.createdAt).getTime(), 3600_000);
      clock.advance(3600_000);
      assert.equal(await works(short, s), false);
    } finally {
      await short.close();
    }
  });

  it('the appowner levels ask the identity store\'s appowners collection (component names map to the app)', async () => {
    const owner = await login(node, bitcoinWallet());
    const other = await login(node, bitcoinWallet());
    const t = await login(node, team);
    await node.host.stores.get('identity', 'appowners').insert({ appname: 'myapp', owner: owner.legacyid });
    const caller = async (l: LoggedIn) => node.host.auth.resolve(l.header);
    assert.equal(await node.host.auth.allows('appowner', await caller(owner), 'myapp'), true);
    assert.equal(await node.host.auth.allows('appowner', await caller(owner), 'web_myapp'), true);
    assert.equal(await node.host.auth.allows('appowner', await caller(other), 'myapp'), false);
    assert.equal(await node.host.auth.allows('appowner', await caller(owner), 'otherapp'), false);
    assert.equal(await node.host.auth.allows('appownerabove', await caller(t), 'myapp'), true);
    assert.equal(await node.host.auth.allows('appowner', await caller(owner), '^my.*'), false);
  });
});

describe('identity: sessions survive a restart', () => {
  it('a session logged in before a restart works after it; one logged out stays out; expired ones are purged', async () => {
    const dataDir = tempDir();
    const clock = new TestClock();
    let node = await startIdentityNode({ dataDir, clock, config });
    const kept = await login(node, bitcoinWallet());
    const ended = await login(node, ethereumWallet());
    const short = await login(node, bitcoinWallet());
    await node.get('/id/logoutcurrentsession', { legacyidauth: ended.header });
    await node.close();

    node = await startIdentityNode({ dataDir, clock, config });
    try {
      assert.equal(await works(node, kept), true);
      assert.equal(await works(node, ended), false);
      assert.equal(await works(node, short), true);
      assert.equal(await node.host.stores.get('identity', 'sessions').count({}), 2);
    } finally {
      await node.close();
    }

    clock.advance(14 * 24 * 3600_000);
    node = await startIdentityNode({ dataDir, clock, config });
    try {
      assert.equal(await works(node, kept), false);
      assert.equal(await node.host.stores.get('identity', 'sessions').count({}), 0, 'purged at start');
      assert.equal(await node.host.stores.get('identity', 'phrases').count({}), 0);
    } finally {
      await node.close();
    }
  });
});
