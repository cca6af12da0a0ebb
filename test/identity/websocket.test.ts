/** The login websocket /ws/id/<loginPhrase> and POST /id/providesign (the cross-device hand-over). */
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { TestClock, type TestNode } from '../support/node.ts';
import { bitcoinWallet, ethereumWallet } from './keys.ts';
import { login, startIdentityNode } from './node.ts';

interface Waiting {
  opened: Promise<void>;
  /** The messages received and the close code, once the server closed the socket. */
  done: Promise<{ messages: any[]; code: number }>;
}

function listen(node: TestNode, phrase: string): Waiting {
  const ws = new WebSocket(node.url.replace('http', 'ws') + '/ws/id/' + encodeURIComponent(phrase));
  const messages: any[] = [];
  ws.on('message', (m) => messages.push(JSON.parse(String(m))));
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const done = new Promise<{ messages: any[]; code: number }>((resolve) => ws.once('close', (code) => resolve({ messages, code })));
  return { opened, done };
}

// No wait is needed between 'open' and the login: the node subscribes the socket in the same tick as it
// writes the handshake answer, before it reads the next request.

describe('identity: login websocket and providesign', () => {
  let node: TestNode;
  const clock = new TestClock();
  const admin = bitcoinWallet();
  before(async () => {
    node = await startIdentityNode({ clock, config: { initial: { legacyid: admin.legacyid }, identity: { maxSocketsPerPhrase: 2 } } });
  });
  after(() => node.close());

  it('pushes the login envelope to every socket waiting on the phrase, then closes them (4012)', async () => {
    const w = bitcoinWallet();
    const phrase = (await node.get('/id/loginphrase')).json.data;
    const a = listen(node, phrase);
    const b = listen(node, phrase);
    await Promise.all([a.opened, b.opened]);
    const third = await listen(node, phrase).done;
    assert.equal(third.messages[0].data.name, 'TooManySockets', 'maxSocketsPerPhrase: 2');
    const signature = w.sign(phrase);
    const res = await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature });
    for (const s of [await a.done, await b.done]) {
      assert.equal(s.code, 4012);
      assert.equal(s.messages.length, 1);
      assert.deepEqual(s.messages[0], res.json);
      assert.deepEqual(Object.keys(s.messages[0]).sort(), ['data', 'status']);
      assert.equal(s.messages[0].data.legacyid, w.legacyid);
      assert.equal(s.messages[0].data.privilege, 'user');
    }
  });

  it('an unknown, malformed, used or expired phrase gets an error envelope, then the socket closes', async () => {
    const unknown = listen(node, String(clock.now()) + 'z'.repeat(43));
    assert.equal((await unknown.done).messages[0].data.name, 'UnknownPhrase');
    const malformed = listen(node, 'loginphrase');
    assert.equal((await malformed.done).messages[0].data.name, 'InvalidPhrase');
    const l = await login(node, ethereumWallet());
    const used = listen(node, l.loginPhrase);
    assert.equal((await used.done).messages[0].data.name, 'UsedPhrase');
    const phrase = (await node.get('/id/loginphrase')).json.data;
    clock.advance(15 * 60_000 + 1);
    const expired = await listen(node, phrase).done;
    assert.equal(expired.messages[0].status, 'error');
    assert.equal(expired.messages[0].data.message, 'Signed message is no longer valid. Please request a new one.');
  });

  it('an idle socket is closed with an error envelope when its wait ends (wsTimeoutSeconds)', async () => {
    const quick = await startIdentityNode({ config: { identity: { wsTimeoutSeconds: 1 } } });
    try {
      const phrase = (await quick.get('/id/loginphrase')).json.data;
      const s = await listen(quick, phrase).done;
      assert.equal(s.messages[0].data.name, 'ExpiredPhrase');
    } finally {
      await quick.close();
    }
  });

  describe('POST /id/providesign', () => {
    it('stores the record (signature, identifier, createdAt, expiredAt, _id) and the waiting page is logged in', async () => {
      const w = ethereumWallet();
      const phrase = (await node.get('/id/loginphrase')).json.data;
      const page = listen(node, phrase);
      await page.opened;
      const signature = await w.sign(phrase);
      const res = await node.post('/legacyid/providesign', { address: w.legacyid, message: phrase, signature });
      assert.equal(res.json.status, 'success', res.text);
      const rec = res.json.data;
      assert.deepEqual(Object.keys(rec).sort(), ['_id', 'createdAt', 'expiredAt', 'identifier', 'signature']);
      assert.equal(rec.identifier, w.legacyid);
      assert.equal(rec.signature, signature);
      assert.equal(new Date(rec.expiredAt).getTime() - new Date(rec.createdAt).getTime(), 15 * 60_000);
      assert.equal(new Date(rec.createdAt).toISOString(), rec.createdAt);
      const pushed = await page.done;
      assert.equal(pushed.messages[0].data.signature, signature);
      // The page (or wallet) may still post the same login: an idempotent success.
      const again = await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature });
      assert.equal(again.json.status, 'success');
    });

    it('refuses what verifylogin refuses: bad id, unknown phrase, invalid signature (nothing stored)', async () => {
      const w = bitcoinWallet();
      const phrase = (await node.get('/id/loginphrase')).json.data;
      const before = await node.host.stores.get('identity', 'signatures').count({});
      const cases: [unknown, string][] = [
        [{ address: 'nope', message: phrase, signature: w.sign(phrase) }, 'InvalidId'],
        [{ address: w.legacyid, message: String(clock.now()) + 'q'.repeat(43), signature: w.sign(phrase) }, 'UnknownPhrase'],
        [{ address: w.legacyid, message: phrase, signature: bitcoinWallet().sign(phrase) }, 'InvalidSignature'],
        [{ address: w.legacyid, message: phrase }, 'MissingSignature'],
      ];
      for (const [body, name] of cases) assert.equal((await node.post('/id/providesign', body)).json.data.name, name);
      assert.equal(await node.host.stores.get('identity', 'signatures').count({}), before);
    });
  });
});
