/**
 * Phrase flooding (issue 11), in process with a controlled clock: phrases prove themselves, so a flood
 * cannot evict a fetched one or the operator's emergency phrase, and nothing is written per phrase. The
 * same attack against the real node process, with its memory and disk, is in attack.test.ts.
 */
import assert from 'node:assert/strict';
import { TestClock, tempDir, type TestNode } from '../support/node.ts';
import { Client, attackerAddresses, pool } from '../support/http-client.ts';
import { bitcoinWallet } from '../support/wallets.ts';
import { startIdentityNode } from './node.ts';
import { authHeader } from '../support/wallets.ts';
import { WindowLimiter, addressKey } from '../../plugins/identity/limits.ts';

const admin = bitcoinWallet();
const TTL = 15 * 60_000;

describe('identity: login phrases under a flood', () => {
  let node: TestNode;
  let real: Client;
  const clock = new TestClock();
  before(async () => {
    node = await startIdentityNode({ clock, config: { initial: { legacyid: admin.legacyid }, identity: { maxActivePhrases: 100, phrasesPerAddress: 20 } } });
    real = new Client(node.url);
  });
  after(async () => {
    real.close();
    await node.close();
  });

  const asOperator = async () => {
    const phrase = (await real.get('/id/emergencyphrase')).json.data;
    const signature = admin.sign(phrase);
    await real.post('/id/verifylogin', { legacyid: admin.legacyid, loginPhrase: phrase, signature });
    return authHeader(admin.legacyid, signature, phrase);
  };

  it('a phrase a real user fetched still logs in at the end of its 15 minutes after a flood; so does the operator\'s emergency phrase', async () => {
    const user = bitcoinWallet();
    const userPhrase = (await real.get('/id/loginphrase')).json.data;
    const emergency = (await real.get('/id/emergencyphrase')).json.data;
    // 60 addresses x 30 requests (25 login phrases, over their 20, and 5 emergency phrases): 1,500 phrases
    // issued (15 times what activeloginphrases lists), 300 refused.
    const names = new Map<string, number>();
    await pool(attackerAddresses(60), 20, async (a) => {
      const c = new Client(node.url, a, 1);
      for (let i = 0; i < 30; i++) {
        const r = await c.get(i % 6 ? '/id/loginphrase' : '/id/emergencyphrase');
        const name = r.json.status === 'success' ? 'issued' : r.json.data.name;
        names.set(name, (names.get(name) ?? 0) + 1);
      }
      c.close();
    });
    assert.deepEqual(Object.fromEntries(names), { issued: 1500, TooManyPhrases: 300 });
    assert.equal(await node.host.stores.get('identity', 'phrases').count({}), 0, 'issuing writes nothing');

    clock.advance(TTL - 1);
    const ok = await real.post('/id/verifylogin', { legacyid: user.legacyid, loginPhrase: userPhrase, signature: user.sign(userPhrase) });
    assert.equal(ok.json.status, 'success', ok.text);
    const em = await real.post('/id/verifylogin', { legacyid: admin.legacyid, loginPhrase: emergency, signature: admin.sign(emergency) });
    assert.equal(em.json.data.privilege, 'admin', em.text);
    // One millisecond later a phrase of that age is over.
    const late = (await real.get('/id/loginphrase')).json.data;
    clock.advance(TTL);
    const w = bitcoinWallet();
    assert.equal((await real.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: late, signature: w.sign(late) })).json.data.name, 'ExpiredPhrase');
  });

  it('an address is issued phrasesPerAddress phrases of each kind per 15 minutes, then told why; the next window gives more', async () => {
    const c = new Client(node.url, '127.0.9.9', 1);
    try {
      for (let i = 0; i < 20; i++) assert.equal((await c.get('/id/loginphrase')).json.status, 'success');
      const refused = (await c.get('/id/loginphrase')).json.data;
      assert.equal(refused.code, 429);
      assert.equal(refused.name, 'TooManyPhrases');
      assert.match(refused.message, /20 login phrases in the last 15 minutes/);
      // The other kind has its own count: the operator behind the same address still gets an emergency phrase.
      assert.equal((await c.get('/id/emergencyphrase')).json.status, 'success');
      // Another address is not affected.
      assert.equal((await new Client(node.url, '127.0.9.10', 1).get('/id/loginphrase')).json.status, 'success');
      clock.advance(TTL);
      assert.equal((await c.get('/id/loginphrase')).json.status, 'success');
    } finally {
      c.close();
    }
  });

  it('activeloginphrases lists every phrase of the last 15 minutes (used and usable) until maxActivePhrases; a flood keeps the newest, and emergency phrases have their own record', async () => {
    clock.advance(TTL);
    const op = await asOperator();
    const list = async () => (await real.get('/id/activeloginphrases', { legacyidauth: op })).json.data as any[];
    const mine = [(await real.get('/id/loginphrase')).json.data, (await real.get('/id/loginphrase')).json.data];
    const before = await list();
    assert.deepEqual(
      before.map((p) => `${p.used ? 'used' : 'usable'} ${p.emergency ? 'emergency' : 'login'}`).sort(),
      ['usable login', 'usable login', 'used emergency'],
      'the operator\'s used emergency phrase and two usable ones',
    );
    assert.deepEqual(before.filter((p) => !p.emergency).map((p) => p.loginPhrase), mine);
    // 150 login phrases from 10 addresses: over the record's 100, the newest 100 are listed; the emergency one stays.
    await pool(attackerAddresses(10), 10, async (a) => {
      const c = new Client(node.url, a, 1);
      for (let i = 0; i < 15; i++) await c.get('/id/loginphrase');
      c.close();
    });
    const after = await list();
    assert.equal(after.filter((p) => !p.emergency).length, 100);
    assert.equal(after.filter((p) => p.emergency && p.used).length, 1);
    assert.ok(!after.some((p) => mine.includes(p.loginPhrase)), 'the oldest fell off the list...');
    const w = bitcoinWallet();
    const ok = await real.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: mine[0], signature: w.sign(mine[0]) });
    assert.equal(ok.json.status, 'success', '...but still logs in');
    assert.ok((await list()).some((p) => p.loginPhrase === mine[0] && p.used), 'and is listed again once used');
  });

  it('refuses a phrase of the right form that this node did not sign, and an emergency phrase cannot pass as a login phrase', async () => {
    const w = bitcoinWallet();
    const forged = String(clock.now()) + 'a'.repeat(43);
    assert.equal((await real.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: forged, signature: w.sign(forged) })).json.data.name, 'UnknownPhrase');
    const em: string = (await real.get('/id/emergencyphrase')).json.data;
    assert.equal((await real.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: em, signature: w.sign(em) })).json.data.name, 'EmergencyPhrase');
    const future = String(clock.now() + 3600_000) + em.slice(13);
    assert.equal((await real.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: future, signature: w.sign(future) })).json.data.name, 'UnknownPhrase');
  });
});

describe('identity: client addresses', () => {
  it('IPv4-mapped IPv6 is its IPv4 address; IPv6 counts by its /64 prefix', () => {
    assert.equal(addressKey('::ffff:203.0.113.9'), '203.0.113.9');
    assert.equal(addressKey('203.0.113.9'), '203.0.113.9');
    assert.equal(addressKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
    assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(addressKey('::1'), '0:0:0:0::/64');
  });

  it('the per-address window table is bounded: past maxKeys the oldest window is forgotten', () => {
    let now = 0;
    const limiter = new WindowLimiter(2, 1000, 3, () => now);
    for (const k of ['a', 'b', 'c']) assert.equal(limiter.take(k), true);
    assert.equal(limiter.take('a'), true);
    assert.equal(limiter.take('a'), false, 'a is at its limit');
    assert.equal(limiter.take('d'), true);
    assert.equal(limiter.size, 3, 'a (the oldest window) was forgotten for d');
    assert.equal(limiter.take('a'), true, 'so a starts again');
    now = 1000;
    limiter.sweep();
    assert.equal(limiter.size, 0);
  });
});

describe('identity: used phrases', () => {
  it('phrases survive a restart (the node secret is kept); a used one stays used', async () => {
    const dataDir = tempDir();
    const clock = new TestClock();
    let node = await startIdentityNode({ dataDir, clock });
    const w = bitcoinWallet();
    const fresh = (await node.get('/id/loginphrase')).json.data;
    const used = (await node.get('/id/loginphrase')).json.data;
    const sig = w.sign(used);
    await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: used, signature: sig });
    await node.get('/id/logoutcurrentsession', { legacyidauth: authHeader(w.legacyid, sig, used) });
    await node.close();
    node = await startIdentityNode({ dataDir, clock });
    try {
      assert.equal((await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: fresh, signature: w.sign(fresh) })).json.status, 'success');
      assert.equal((await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: used, signature: sig })).json.data.name, 'UsedPhrase');
    } finally {
      await node.close();
    }
  });

  it('past maxUsedPhrases used in 15 minutes the oldest is forgotten and phrases as old are refused: no phrase logs in twice', async () => {
    const clock = new TestClock();
    const node = await startIdentityNode({ clock, config: { identity: { maxUsedPhrases: 100, phrasesPerAddress: 1000 } } });
    try {
      const w = bitcoinWallet();
      const logins: { phrase: string; signature: string }[] = [];
      for (let i = 0; i < 101; i++) {
        clock.advance(1);
        const phrase = (await node.get('/id/loginphrase')).json.data;
        const signature = w.sign(phrase);
        assert.equal((await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature })).json.status, 'success');
        logins.push({ phrase, signature });
      }
      const first = logins[0];
      await node.get('/id/logoutcurrentsession', { legacyidauth: authHeader(w.legacyid, first.signature, first.phrase) });
      const again = await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: first.phrase, signature: first.signature });
      assert.equal(again.json.data.name, 'ExpiredPhrase', 'its row is gone, so it is refused by age');
      const last = logins[100];
      assert.equal((await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: last.phrase, signature: last.signature })).json.status, 'success', 'a retry of a remembered one');
    } finally {
      await node.close();
    }
  });
});
