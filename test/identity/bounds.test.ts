/**
 * Issue 11 in process: sessions bounded per id and overall (never the operator's or the core team's for
 * others), loggedusers paged, one identity per ethereum wallet however it is spelled, providesign replays
 * adding nothing, and purges that let requests through while they run.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TestClock, tempDir, type TestNode } from '../support/node.ts';
import { eventually } from '../support/http-client.ts';
import { bitcoinWallet, ethereumWallet } from '../support/wallets.ts';
import { startIdentityNode } from './node.ts';
import { authHeader, login, type LoggedIn } from '../support/wallets.ts';

const admin = bitcoinWallet();
const team = bitcoinWallet();
const works = async (node: TestNode, l: LoggedIn) => (await node.get('/id/loggedsessions', { legacyidauth: l.header })).json.status === 'success';

describe('identity: session bounds', () => {
  let node: TestNode;
  before(async () => {
    node = await startIdentityNode({ config: { initial: { legacyid: admin.legacyid }, coreTeam: [team.legacyid], identity: { maxSessions: 10, maxSessionsPerId: 3 } } });
  });
  after(() => node.close());

  it('past maxSessions the oldest user sessions go, never the operator\'s or the core team\'s', async () => {
    const op = await login(node, admin);
    const t = await login(node, team);
    const users: LoggedIn[] = [];
    for (let i = 0; i < 14; i++) users.push(await login(node, bitcoinWallet()));
    assert.equal(await works(node, op), true, 'the operator\'s session is the oldest and stays');
    assert.equal(await works(node, t), true, 'the core team\'s too');
    const alive = await Promise.all(users.map((u) => works(node, u)));
    assert.deepEqual(alive, [...Array(6).fill(false), ...Array(8).fill(true)], 'the 6 oldest user sessions went');
    const all = (await node.get('/id/loggedusers', { legacyidauth: op.header })).json.data;
    assert.equal(all.length, 10);
    // Evicted rows leave the store right after the login that evicted them (not awaited by it).
    await eventually(async () => (await node.host.stores.get('identity', 'sessions').count({})) === 10, 'the store to hold 10 sessions');
  });

  it('past maxSessionsPerId an id\'s own oldest session goes (the operator\'s included, by the operator\'s own logins)', async () => {
    for (const w of [bitcoinWallet(), admin]) {
      const mine: LoggedIn[] = [];
      for (let i = 0; i < 5; i++) mine.push(await login(node, w));
      assert.deepEqual(await Promise.all(mine.map((l) => works(node, l))), [false, false, true, true, true]);
      const listed = (await node.get('/id/loggedsessions', { legacyidauth: mine[4].header })).json.data;
      assert.deepEqual(listed.map((s: any) => s.loginPhrase), mine.slice(2).map((l) => l.loginPhrase));
    }
  });
});

describe('identity: configuration of earlier versions', () => {
  it('a config file with the retired keys maxCachedSessions and maxSocketsPerPhrase still starts', async () => {
    const node = await startIdentityNode({ config: { identity: { maxCachedSessions: 100, maxSocketsPerPhrase: 8, maxActivePhrases: 500 } } });
    try {
      assert.equal((await node.get('/id/loginphrase')).json.status, 'success');
    } finally {
      await node.close();
    }
  });
});

describe('identity: GET /id/loggedusers is paged', () => {
  it('answers 100 sessions by default, oldest first; offset and limit (at most 1000) page through the rest', async () => {
    const node = await startIdentityNode({ config: { initial: { legacyid: admin.legacyid }, identity: { phrasesPerAddress: 200 } } });
    try {
      const op = await login(node, admin);
      // 104 more logins by 4 wallets make 105 sessions.
      const wallets = [bitcoinWallet(), bitcoinWallet(), bitcoinWallet(), bitcoinWallet()];
      for (let i = 0; i < 104; i++) await login(node, wallets[i % 4]);
      const get = async (q = '') => (await node.get('/id/loggedusers' + q, { legacyidauth: op.header })).json.data;
      const first = await get();
      assert.equal(first.length, 100);
      assert.equal(first[0].loginPhrase, op.loginPhrase);
      const rest = await get('?offset=100');
      assert.equal(rest.length, 5);
      assert.deepEqual(await get('?offset=1&limit=2'), first.slice(1, 3));
      assert.equal((await get('?limit=1000')).length, 105);
      assert.equal((await get('?offset=500')).length, 0);
    } finally {
      await node.close();
    }
  });
});

describe('identity: one ethereum wallet is one identity, however its id is spelled', () => {
  it('checksummed, lower- and upper-case logins are one id: listed together, all ended by logoutallsessions', async () => {
    const w = ethereumWallet();
    const hex = w.legacyid.slice(2);
    const lower = '0x' + hex.toLowerCase();
    const node = await startIdentityNode({ config: { initial: { legacyid: lower } } });
    try {
      const spellings = [w.legacyid, lower, '0x' + hex.toUpperCase()];
      const logins: LoggedIn[] = [];
      for (const legacyid of spellings) logins.push(await login(node, { legacyid, sign: w.sign }));
      for (const l of logins) {
        assert.equal(l.answer.data.legacyid, w.legacyid, 'answered in its checksummed spelling');
        assert.equal(l.answer.data.privilege, 'admin', 'the operator, configured in lower case');
      }
      // A header may carry any spelling of the id.
      const mixed = authHeader(spellings[2], logins[0].signature, logins[0].loginPhrase);
      const mine = (await node.get('/id/loggedsessions', { legacyidauth: mixed })).json.data;
      assert.deepEqual(mine.map((s: any) => s.legacyid), [w.legacyid, w.legacyid, w.legacyid]);
      const check = await node.post('/id/checkprivilege', { legacyid: lower, loginPhrase: logins[1].loginPhrase, signature: logins[1].signature });
      assert.equal(check.json.data.privilege, 'admin');
      await node.get('/id/logoutallsessions', { legacyidauth: logins[1].header });
      for (const l of logins) assert.equal(await works(node, l), false, l.legacyid);
    } finally {
      await node.close();
    }
  });
});

describe('identity: POST /id/providesign replays', () => {
  it('the same signature replayed 500 times answers the same record and stores one', async () => {
    const node = await startIdentityNode();
    try {
      const w = bitcoinWallet();
      const phrase = (await node.get('/id/loginphrase')).json.data;
      const body = { address: w.legacyid, message: phrase, signature: w.sign(phrase) };
      const first = (await node.post('/id/providesign', body)).json.data;
      const ids = new Set<string>();
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all(Array.from({ length: 50 }, () => node.post('/id/providesign', body)));
        for (const a of answers) ids.add(a.json.data._id ?? a.text);
      }
      assert.deepEqual([...ids], [first._id]);
      assert.equal(await node.host.stores.get('identity', 'signatures').count({}), 1);
      assert.equal(await node.host.stores.get('identity', 'sessions').count({}), 1);
      const stored = await node.host.stores.get('identity', 'signatures').findOne({});
      assert.equal(stored.signature, undefined, 'the store keeps the signature\'s digest only');
    } finally {
      await node.close();
    }
  });
});

describe('identity: purges run in small batches', () => {
  it('while 10,000 expired provided signatures are purged (100 batches), requests are answered between the batches', async () => {
    const dataDir = tempDir();
    const clock = new TestClock();
    const t = clock.now();
    fs.mkdirSync(path.join(dataDir, 'identity'), { recursive: true });
    const lines = Array.from({ length: 10_000 }, (_, i) =>
      JSON.stringify({ _id: `s${i}`, sigDigest: 'x', identifier: admin.legacyid, loginPhrase: `${t}${String(i).padStart(43, '0')}`, createdAt: t, expiredAt: t + 60_000 }),
    );
    fs.writeFileSync(path.join(dataDir, 'identity', 'signatures.db'), lines.join('\n') + '\n');
    const node = await startIdentityNode({ dataDir, clock, config: { identity: { purgeIntervalSeconds: 1 } } });
    try {
      const signs = node.host.stores.get('identity', 'signatures');
      assert.equal(await signs.count({}), 10_000);
      clock.advance(60_000);
      // Between two batches of the purge, an HTTP request is answered and the store is part-way through.
      const seen: number[] = [];
      for (;;) {
        const v = await node.get('/core/version');
        assert.equal(v.json.status, 'success');
        const left = await signs.count({});
        seen.push(left);
        if (left === 0) break;
      }
      assert.ok(seen.some((n) => n > 0 && n < 10_000 && n % 100 === 0), `answered mid-purge: counts seen ${seen.slice(0, 20).join(', ')}`);
    } finally {
      await node.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
