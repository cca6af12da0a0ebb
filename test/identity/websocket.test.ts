/** The login websocket /ws/id/<loginPhrase> and POST /id/providesign (the cross-device hand-over). */
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { TestClock, type TestNode } from '../support/node.ts';
import { bitcoinWallet, ethereumWallet } from '../support/wallets.ts';
import { eventually } from '../support/http-client.ts';
import { startIdentityNode } from './node.ts';
import { login } from '../support/wallets.ts';

interface Waiting {
  ws: WebSocket;
  /** The messages received so far. */
  messages: any[];
  opened: Promise<void>;
  /** The messages received and the close code, once the server closed the socket (or refused the handshake). */
  done: Promise<{ messages: any[]; code: number; refused?: string }>;
}

/** A login page's socket; `from` picks the client address (any 127.0.0.0/8 address reaches the node). */
export function listen(node: TestNode, phrase: string, from?: string): Waiting {
  const ws = new WebSocket(node.url.replace('http', 'ws') + '/ws/id/' + encodeURIComponent(phrase), from ? { localAddress: from } : {});
  const messages: any[] = [];
  let refused: string | undefined;
  ws.on('message', (m) => messages.push(JSON.parse(String(m))));
  ws.on('error', (e) => (refused = String(e.message)));
  const opened = new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  opened.catch(() => undefined);
  const done = new Promise<{ messages: any[]; code: number; refused?: string }>((resolve) => ws.once('close', (code) => resolve({ messages, code, refused })));
  return { ws, messages, opened, done };
}

// No wait is needed between 'open' and the login: the node subscribes the socket in the same tick as it
// writes the handshake answer, before it reads the next request.

describe('identity: login websocket and providesign', () => {
  let node: TestNode;
  const clock = new TestClock();
  const admin = bitcoinWallet();
  before(async () => {
    node = await startIdentityNode({ clock, config: { initial: { legacyid: admin.legacyid } } });
  });
  after(() => node.close());

  it('pushes the login envelope to the socket waiting on the phrase, then closes it (4012)', async () => {
    const w = bitcoinWallet();
    const phrase = (await node.get('/id/loginphrase')).json.data;
    const page = listen(node, phrase);
    await page.opened;
    const signature = w.sign(phrase);
    const res = await node.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature });
    const s = await page.done;
    assert.equal(s.code, 4012);
    assert.equal(s.messages.length, 1);
    assert.deepEqual(s.messages[0], res.json);
    assert.deepEqual(Object.keys(s.messages[0]).sort(), ['data', 'status']);
    assert.equal(s.messages[0].data.legacyid, w.legacyid);
    assert.equal(s.messages[0].data.privilege, 'user');
  });

  it('the signature leak: only the first socket opened on a phrase gets the login; a later one is refused, even after it closed', async () => {
    // The operator's page fetched a phrase and waits; someone who saw the phrase (a QR code on the screen)
    // opens a socket on it before the wallet signs. In the reference that socket got the signature, and the
    // header rebuilt from it was an admin session.
    const phrase = (await node.get('/id/loginphrase')).json.data;
    const page = listen(node, phrase);
    await page.opened;
    const spy = await listen(node, phrase, '127.0.0.9').done;
    assert.deepEqual(spy.messages.map((m) => m.data.name), ['PhraseWatched']);
    assert.equal(spy.messages[0].data.code, 409);
    const signature = admin.sign(phrase);
    await node.post('/id/verifylogin', { legacyid: admin.legacyid, loginPhrase: phrase, signature });
    const got = await page.done;
    assert.equal(got.messages[0].data.privilege, 'admin');
    assert.equal(got.messages[0].data.signature, signature);
    // A page that closed early leaves the phrase taken: nobody else can wait on it afterwards.
    const other = (await node.get('/id/loginphrase')).json.data;
    const first = listen(node, other);
    await first.opened;
    first.ws.close();
    await first.done;
    assert.equal((await listen(node, other, '127.0.0.9').done).messages[0].data.name, 'PhraseWatched');
  });

  it('sockets are capped per address, so one address cannot fill the node: a real page elsewhere still opens its socket', async () => {
    const capped = await startIdentityNode({ config: { identity: { maxSocketsPerAddress: 3, phrasesPerAddress: 100 } } });
    try {
      const attacker: Waiting[] = [];
      for (let i = 0; i < 5; i++) attacker.push(listen(capped, (await capped.get('/id/loginphrase')).json.data, '127.0.0.7'));
      await Promise.all(attacker.map((a) => a.opened)); // a refusal is an envelope on an opened socket
      await eventually(() => attacker.filter((a) => a.messages.length).length === 2, 'two refusals');
      assert.deepEqual(attacker.flatMap((a) => a.messages).map((m) => m.data.name), ['TooManySockets', 'TooManySockets']);
      const waiting = attacker.filter((a) => !a.messages.length);
      assert.equal(waiting.length, 3);
      const real = listen(capped, (await capped.get('/id/loginphrase')).json.data, '127.0.0.1');
      await real.opened;
      const w = bitcoinWallet();
      const phrase = decodeURIComponent(real.ws.url.split('/').pop()!);
      await capped.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature: w.sign(phrase) });
      assert.equal((await real.done).code, 4012);
      // A closed socket gives its address its place back.
      waiting[0].ws.close();
      await waiting[0].done;
      const again = listen(capped, (await capped.get('/id/loginphrase')).json.data, '127.0.0.7');
      await again.opened;
      again.ws.close();
      for (const a of attacker) a.ws.close();
    } finally {
      await capped.close();
    }
  });

  it('an unknown, used or expired phrase gets an error envelope, then the socket closes; a malformed one is refused at the handshake (400)', async () => {
    const unknown = listen(node, String(clock.now()) + 'z'.repeat(43));
    assert.equal((await unknown.done).messages[0].data.name, 'UnknownPhrase');
    const malformed = await listen(node, 'loginphrase').done;
    assert.match(malformed.refused ?? '', /400/);
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
        [{ address: 'nope', message: phrase, signature: w.sign(phrase) }, 'ValidationError'],
        [{ address: '1KPKzyp9VyB9ouAA4spZ48x8g32sxLVK6a', message: phrase, signature: w.sign(phrase) }, 'InvalidId'],
        [{ address: w.legacyid, message: String(clock.now()) + 'q'.repeat(43), signature: w.sign(phrase) }, 'UnknownPhrase'],
        [{ address: w.legacyid, message: phrase, signature: bitcoinWallet().sign(phrase) }, 'InvalidSignature'],
        [{ address: w.legacyid, message: phrase }, 'ValidationError'],
      ];
      for (const [body, name] of cases) assert.equal((await node.post('/id/providesign', body)).json.data.name, name);
      assert.equal(await node.host.stores.get('identity', 'signatures').count({}), before);
    });
  });
});
