/** Login over HTTP: phrases, the fitness gate, every id kind, both content types, refusals, fixtures. */
import assert from 'node:assert/strict';
import NeDB from 'nedb-promises';
import path from 'node:path';
import { TestClock, tempDir, type TestNode } from '../support/node.ts';
import { bitcoinWallet, ethereumWallet } from '../support/wallets.ts';
import { startIdentityNode } from './node.ts';
import { authHeader, login } from '../support/wallets.ts';
import { BITCOIN_VECTORS } from './vectors.ts';

const admin = bitcoinWallet();
const team = ethereumWallet();

const errorOf = (res: { json: any }) => {
  assert.equal(res.json?.status, 'error', JSON.stringify(res.json));
  return res.json.data as { code: number; name: string; message: string };
};

describe('identity: login', () => {
  let node: TestNode;
  const clock = new TestClock();
  before(async () => {
    node = await startIdentityNode({ clock, config: { initial: { legacyid: admin.legacyid }, coreTeam: [team.legacyid] } });
  });
  after(() => node.close());

  describe('GET /id/loginphrase', () => {
    it('answers a fresh phrase: 13-digit time of issue, then [0-9a-z], 40 to 70 characters', async () => {
      const a = await node.get('/id/loginphrase');
      const b = await node.get('/legacyid/loginphrase');
      for (const r of [a, b]) {
        assert.equal(r.status, 200);
        assert.equal(r.json.status, 'success');
        assert.match(r.json.data, /^\d{13}[0-9a-z]{27,57}$/);
        assert.equal(Number(r.json.data.slice(0, 13)), clock.now());
      }
      assert.notEqual(a.json.data, b.json.data);
    });

    it('is refused with a clear error while the node fails a fitness check; the emergency phrase is not', async () => {
      const drop = node.host.health.register('test-disk', () => ({ ok: false, message: 'disk full' }));
      try {
        const e = errorOf(await node.get('/id/loginphrase'));
        assert.equal(e.code, 503);
        assert.equal(e.name, 'NodeUnfit');
        assert.match(e.message, /test-disk \(disk full\)/);
        assert.match(e.message, /emergencyphrase/);
        const em = await node.get('/id/emergencyphrase');
        assert.equal(em.json.status, 'success');
        // Only the operator and the core team may use an emergency phrase.
        const user = bitcoinWallet();
        const refused = errorOf(await node.post('/id/verifylogin', { legacyid: user.legacyid, loginPhrase: em.json.data, signature: user.sign(em.json.data) }));
        assert.equal(refused.name, 'EmergencyPhrase');
        const ok = await node.post('/id/verifylogin', { legacyid: admin.legacyid, loginPhrase: em.json.data, signature: admin.sign(em.json.data) });
        assert.equal(ok.json.data.privilege, 'admin');
        const em2 = (await node.get('/legacyid/emergencyphrase')).json.data;
        const teamOk = await node.post('/id/verifylogin', { legacyid: team.legacyid, loginPhrase: em2, signature: await team.sign(em2) });
        assert.equal(teamOk.json.data.privilege, 'coreteam');
      } finally {
        drop();
      }
      assert.equal((await node.get('/id/loginphrase')).json.status, 'success');
    });

    it('does not wait on, nor is refused by, report-only checks (required: false)', async () => {
      const dropSlow = node.host.health.register('test-slow', () => new Promise<boolean>(() => undefined), { required: false, timeoutMs: 600_000 });
      const dropFailing = node.host.health.register('test-report', () => false, { required: false });
      try {
        assert.equal((await node.get('/id/loginphrase')).json.status, 'success');
      } finally {
        dropSlow();
        dropFailing();
      }
    });

    it('refuses a query string (HTTP 400)', async () => {
      assert.equal((await node.get('/id/loginphrase?x=1')).status, 400);
    });
  });

  describe('POST /id/verifylogin', () => {
    const kinds = [
      ['bitcoin compressed', () => bitcoinWallet(true)],
      ['bitcoin uncompressed', () => bitcoinWallet(false)],
      ['bitcoin, p2wpkh-flagged header (Trezor/Electrum)', () => bitcoinWallet(true, 'p2wpkh')],
      ['bitcoin, p2sh(p2wpkh)-flagged header', () => bitcoinWallet(true, 'p2sh(p2wpkh)')],
      ['ethereum', () => ethereumWallet()],
    ] as const;
    for (const [kind, make] of kinds) {
      for (const type of ['text/plain', 'application/json']) {
        it(`logs in a fresh ${kind} key (${type}) and the header then authenticates`, async () => {
          const w = make();
          const l = await login(node, w, type);
          const d = l.answer.data;
          assert.deepEqual(
            { message: d.message, legacyid: d.legacyid, loginPhrase: d.loginPhrase, signature: d.signature, privilege: d.privilege },
            { message: 'Successfully logged in', legacyid: w.legacyid, loginPhrase: l.loginPhrase, signature: l.signature, privilege: 'user' },
          );
          const me = await node.get('/id/loggedsessions', { legacyidauth: l.header });
          assert.equal(me.json.status, 'success');
          assert.deepEqual(me.json.data.map((s: any) => s.loginPhrase), [l.loginPhrase]);
        });
      }
    }

    it('labels the operator admin and the core team coreteam; /legacyid/verifylogin is the same route', async () => {
      const phrase = (await node.get('/id/loginphrase')).json.data;
      const a = await node.post('/legacyid/verifylogin', { legacyid: admin.legacyid, loginPhrase: phrase, signature: admin.sign(phrase) });
      assert.equal(a.json.data.privilege, 'admin');
      const t = await login(node, team);
      assert.equal(t.answer.data.privilege, 'coreteam');
    });

    it('accepts the reference aliases address and message', async () => {
      const w = bitcoinWallet();
      const phrase = (await node.get('/id/loginphrase')).json.data;
      const r = await node.post('/id/verifylogin', { address: w.legacyid, message: phrase, signature: w.sign(phrase) });
      assert.equal(r.json.data.legacyid, w.legacyid);
    });

    it('answers each missing or malformed field with a message naming the field (the manifest\'s schema)', async () => {
      const w = bitcoinWallet();
      const phrase = (await node.get('/id/loginphrase')).json.data;
      const sig = w.sign(phrase);
      const cases: [unknown, string, RegExp][] = [
        [{ loginPhrase: phrase, signature: sig }, 'ValidationError', /^Invalid body input: body\.legacyid: is required$/],
        [{ legacyid: '34xp4vRoCGJym3xR7yCVPFHoCNxv4Twseo', loginPhrase: phrase, signature: sig }, 'ValidationError', /^Invalid body input: body\.legacyid: must match pattern/],
        [{ legacyid: '2Z123434', loginPhrase: phrase, signature: sig }, 'ValidationError', /body\.legacyid: must match pattern/],
        [{ legacyid: '1'.repeat(36), loginPhrase: phrase, signature: sig }, 'ValidationError', /body\.legacyid: must match pattern/],
        [{ legacyid: '0x' + 'a'.repeat(39), loginPhrase: phrase, signature: sig }, 'ValidationError', /body\.legacyid: must match pattern/],
        // The form is right, the base58check checksum is not: what a schema cannot say, the plugin says.
        [{ legacyid: '1KPKzyp9VyB9ouAA4spZ48x8g32sxLVK6a', loginPhrase: phrase, signature: sig }, 'InvalidId', /^Core ID is not valid: .*checksum/],
        [{ legacyid: { $ne: '' }, loginPhrase: phrase, signature: sig }, 'ValidationError', /body\.legacyid: must be string/],
        [{ address: 5, loginPhrase: phrase, signature: sig }, 'ValidationError', /body\.address: must be string/],
        [{ legacyid: w.legacyid, signature: sig }, 'ValidationError', /^Invalid body input: body\.loginPhrase: is required$/],
        [{ legacyid: w.legacyid, loginPhrase: 'loginphrase', signature: sig }, 'ValidationError', /body\.loginPhrase: must match pattern/],
        [{ legacyid: w.legacyid, message: phrase.slice(0, 30), signature: sig }, 'ValidationError', /body\.message: must match pattern/],
        [{ legacyid: w.legacyid, loginPhrase: phrase }, 'ValidationError', /^Invalid body input: body\.signature: is required$/],
        [{ legacyid: w.legacyid, loginPhrase: phrase, signature: 7 }, 'ValidationError', /body\.signature: must be string/],
        [{ legacyid: w.legacyid, loginPhrase: phrase, signature: '' }, 'ValidationError', /body\.signature: must NOT have fewer than 1 characters/],
        [{ legacyid: w.legacyid, loginPhrase: phrase, signature: '1234356asdf' }, 'InvalidSignature', /^Invalid signature/],
        [{ legacyid: w.legacyid, loginPhrase: phrase, signature: bitcoinWallet().sign(phrase) }, 'InvalidSignature', /^Invalid signature/],
        [[1, 2], 'ValidationError', /body: must be object/],
      ];
      for (const [body, name, message] of cases) {
        const e = errorOf(await node.post('/id/verifylogin', body));
        assert.equal(e.name, name, JSON.stringify(body));
        assert.match(e.message, message);
        assert.ok(e.code === 400 || e.code === 401);
      }
      const notJson = errorOf(await node.post('/id/verifylogin', 'legacyid=1&x'));
      assert.equal(notJson.code, 400);
      // None of those used up the phrase.
      const ok = await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature: sig });
      assert.equal(ok.json.status, 'success');
    });

    it('refuses a phrase of a valid form that this node never issued', async () => {
      const w = bitcoinWallet();
      const phrase = String(clock.now()) + 'a'.repeat(43);
      const e = errorOf(await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature: w.sign(phrase) }));
      assert.equal(e.name, 'UnknownPhrase');
      assert.match(e.message, /not issued by this node.*request a new one/);
    });

    it('refuses a phrase issued more than 15 minutes ago', async () => {
      const w = bitcoinWallet();
      const phrase = (await node.get('/id/loginphrase')).json.data;
      clock.advance(15 * 60_000 + 1);
      const e = errorOf(await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature: w.sign(phrase) }));
      assert.equal(e.name, 'ExpiredPhrase');
      assert.equal(e.message, 'Signed message is no longer valid. Please request a new one.');
    });

    it('a phrase logs in once: another id is refused, the same login again (a retry) gets the same answer', async () => {
      const w = bitcoinWallet();
      const l = await login(node, w);
      const other = bitcoinWallet();
      const e = errorOf(await node.post('/id/verifylogin', { legacyid: other.legacyid, loginPhrase: l.loginPhrase, signature: other.sign(l.loginPhrase) }));
      assert.equal(e.name, 'UsedPhrase');
      const again = await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: l.loginPhrase, signature: l.signature });
      assert.equal(again.json.status, 'success');
      assert.equal(again.json.data.createdAt, l.answer.data.createdAt);
      // After logout the same login is refused: logging out is final.
      await node.get('/id/logoutcurrentsession', { legacyidauth: l.header });
      assert.equal(errorOf(await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: l.loginPhrase, signature: l.signature })).name, 'UsedPhrase');
    });
  });

  describe('header legacyidauth', () => {
    it('a signature whose + / = were not URL-encoded is refused as unauthentic (body code 401)', async () => {
      let l;
      do l = await login(node, bitcoinWallet());
      while (!l.signature.includes('+'));
      const raw = `legacyid=${l.legacyid}&signature=${l.signature}&loginPhrase=${l.loginPhrase}`;
      const res = await node.get('/id/loggedsessions', { legacyidauth: raw });
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, { status: 'error', data: { code: 401, name: 'Unauthorized', message: 'Unauthorized. Access denied.' } });
      assert.equal((await node.get('/id/loggedsessions', { legacyidauth: l.header })).json.status, 'success');
    });

    it('JSON is not accepted; a wrong id, phrase or signature is anonymous', async () => {
      const l = await login(node, bitcoinWallet());
      const other = await login(node, bitcoinWallet());
      const headers = [
        JSON.stringify({ legacyid: l.legacyid, signature: l.signature, loginPhrase: l.loginPhrase }),
        authHeader(other.legacyid, l.signature, l.loginPhrase),
        authHeader(l.legacyid, other.signature, l.loginPhrase),
        authHeader(l.legacyid, l.signature, other.loginPhrase),
        `legacyid=${l.legacyid}&loginPhrase=${l.loginPhrase}`,
      ];
      for (const h of headers) assert.equal(errorOf(await node.get('/id/loggedsessions', { legacyidauth: h })).code, 401, h);
    });
  });
});

describe('identity: reference wallet fixtures log in end to end', () => {
  // The fixtures' phrases carry their own (2021-2022) times: the node runs at each time and holds the phrase
  // as if it had issued it (written to its store before the start, which also proves phrases survive a restart).
  it('admin, core team and app-owner vectors log in over HTTP with their labels; the altered one is refused', async () => {
    const dataDir = tempDir();
    const store = NeDB.create({ filename: path.join(dataDir, 'identity', 'phrases.db'), autoload: true });
    const fixtures = BITCOIN_VECTORS.filter(([, address]) => address !== '1KPKzyp9VyB9ouAA4spZ48x8g32sxLVK6a');
    for (const phrase of new Set(fixtures.map((f) => f[2]))) {
      const t = Number(phrase.slice(0, 13));
      await store.insert({ loginPhrase: phrase, createdAt: t, expireAt: t + 15 * 60_000 });
    }
    const clock = new TestClock(0);
    const node = await startIdentityNode({
      dataDir,
      clock,
      config: { initial: { legacyid: '1CbErtneaX2QVyUfwU7JGB7VzvPgrgc3uC' }, coreTeam: ['1NH9BP155Rp3HSf5ef6NpUbE8JcyLRruAM'] },
    });
    try {
      const labels: Record<string, string> = { '1CbErtneaX2QVyUfwU7JGB7VzvPgrgc3uC': 'admin', '1NH9BP155Rp3HSf5ef6NpUbE8JcyLRruAM': 'coreteam' };
      // Refusals first: they leave the phrase unused for the good signature.
      for (const [role, legacyid, loginPhrase, signature, verifies] of [...fixtures].sort((a, b) => Number(a[4]) - Number(b[4]))) {
        clock.t = Number(loginPhrase.slice(0, 13)) + 1000;
        const res = await node.post('/id/verifylogin', { legacyid, loginPhrase, signature });
        if (!verifies) {
          assert.equal(res.json.data.name, 'InvalidSignature', role);
          continue;
        }
        assert.equal(res.json.status, 'success', `${role}: ${res.text}`);
        assert.equal(res.json.data.privilege, labels[legacyid] ?? 'user', role);
        const me = await node.post('/id/checkprivilege', {}, { legacyidauth: authHeader(legacyid, signature, loginPhrase) });
        assert.equal(me.json.data.privilege, labels[legacyid] ?? 'user');
      }
    } finally {
      await node.close();
    }
  });
});
