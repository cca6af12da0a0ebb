/**
 * Issue 11's attacks on the identity plugin, performed against the real node process (a child `node
 * core/cli/node.ts` with its own config, data folder and port): phrase flooding, providesign replays,
 * session flooding and restart, login-socket exhaustion. Each checks that the node keeps answering and
 * that its memory (VmRSS / VmHWM from /proc) and data folder stay bounded, and prints its figures.
 *
 * Flood sizes prove the point at a fraction of the issue's (10,000 phrase requests vs 20,000; 1,000
 * replays vs 100,000; 900 logins against maxSessions 300; 30,000 stored sessions as found) so the area
 * runs in a few minutes on a busy machine. What each flood proves is a bound (per address, per body, in
 * all) and that the node keeps answering; the bound is reached and passed by the same multiple at these
 * sizes as at the earlier ones (25,000 requests, 5,000 replays, 3,000 logins against 1,000), which cost
 * ~28 s of the suite's CPU more for no further proof (measured: issue 10).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { WebSocket } from 'ws';
import { newPhrase } from '../../plugins/identity/phrases.ts';
import { Client, attackerAddresses, eventually, pool } from '../support/http-client.ts';
import { bitcoinWallet } from '../support/wallets.ts';
import { authHeader } from '../support/wallets.ts';
import { figure, figures, spawnNode, tempFolder, type NodeProcess } from './process.ts';

const admin = bitcoinWallet();

/** Sample the node's resident memory every 50 ms while `work` runs; the highest sample, in MB. */
async function peakDuring<T>(node: NodeProcess, work: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peakMb = node.rssMb();
  const timer = setInterval(() => (peakMb = Math.max(peakMb, node.rssMb())), 50);
  try {
    const result = await work();
    return { result, peakMb: Math.max(peakMb, node.rssMb()) };
  } finally {
    clearInterval(timer);
  }
}

/** Documents live in an nedb file: its lines replayed (a later line for an _id replaces it, `$$deleted` removes it). */
function liveRows(file: string): number {
  if (!fs.existsSync(file)) return 0;
  const live = new Set<string>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    const doc = JSON.parse(line);
    if (doc.$$indexCreated || doc.$$indexRemoved) continue;
    if (doc.$$deleted) live.delete(doc._id);
    else live.add(doc._id);
  }
  return live.size;
}

describe('identity: attacks on the real node process', function () {
  this.timeout(180_000);
  const started: NodeProcess[] = [];
  const start = async (...a: Parameters<typeof spawnNode>) => {
    const n = await spawnNode(...a);
    started.push(n);
    return n;
  };
  // One node serves the attacks (each from addresses of its own; starting a node costs seconds here);
  // the restart test starts its own.
  let node: NodeProcess & { startMs: number };
  /** The session bound of the shared node: the session flood logs in three times as many. */
  const SESSIONS = 300;
  before(async () => {
    node = await start({ operator: admin.legacyid, identity: { maxSessions: SESSIONS } });
  });
  after(async () => {
    for (const n of started.splice(0)) {
      await n.stop();
      fs.rmSync(n.dataDir, { recursive: true, force: true });
      fs.rmSync(n.dataDir + '.yaml', { force: true });
    }
    if (figures.length) console.log('\n  figures (issue 11, identity):\n' + figures.map((f) => '    ' + f).join('\n') + '\n');
  });

  it('phrase flood: 10,000 anonymous phrase requests from 100 addresses; a real user logs in throughout, fetched and emergency phrases survive, memory and disk stay bounded', async () => {
    const real = new Client(node.url, '127.0.0.1', 4);
    const baseMb = node.rssMb();
    const diskBefore = node.diskBytes();
    const fetched = (await real.get('/id/loginphrase')).json.data;
    const emergency = (await real.get('/id/emergencyphrase')).json.data;

    let attempts = 0;
    let successes = 0;
    let flooding = true;
    const outcomes = new Map<string, number>();
    const realUser = (async () => {
      // A real user logging in again and again while the flood runs (one login at a time).
      while (flooding && attempts < 50) {
        attempts++;
        const w = bitcoinWallet();
        const phrase = (await real.get('/id/loginphrase')).json?.data;
        const r = typeof phrase === 'string' ? await real.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature: w.sign(phrase) }) : null;
        if (r?.json?.status === 'success') successes++;
      }
    })();
    const { peakMb } = await peakDuring(node, async () => {
      await pool(attackerAddresses(100), 32, async (a) => {
        const c = new Client(node.url, a, 1);
        for (let i = 0; i < 100; i++) {
          const r = await c.get(i % 10 ? '/id/loginphrase' : '/id/emergencyphrase');
          const k = r.json?.status === 'success' ? 'issued' : (r.json?.data?.name ?? `HTTP ${r.status}`);
          outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
        }
        c.close();
      });
      flooding = false;
      await realUser;
    });
    // 90 login phrases per address over its 60, and 10 emergency phrases: 70 issued, 30 refused each.
    assert.deepEqual(Object.fromEntries(outcomes), { issued: 7_000, TooManyPhrases: 3_000 });

    const user = bitcoinWallet();
    const ok = await real.post('/id/verifylogin', { legacyid: user.legacyid, loginPhrase: fetched, signature: user.sign(fetched) });
    assert.equal(ok.json.status, 'success', `the phrase fetched before the flood: ${ok.text}`);
    const em = await real.post('/id/verifylogin', { legacyid: admin.legacyid, loginPhrase: emergency, signature: admin.sign(emergency) });
    assert.equal(em.json.data.privilege, 'admin', `the operator's emergency phrase: ${em.text}`);
    const op = authHeader(admin.legacyid, admin.sign(emergency), emergency);
    const listed = (await real.get('/id/activeloginphrases', { legacyidauth: op })).json.data;
    assert.equal(listed.length, 7_000 + 2 + attempts, 'every phrase of the last 15 minutes is listed');
    real.close();

    const diskGrowth = node.diskBytes() - diskBefore;
    assert.equal(successes, attempts, `a real user logged in ${successes} of ${attempts} times during the flood`);
    assert.ok(diskGrowth < 64 * 1024, `the data folder grew ${diskGrowth} bytes`);
    assert.ok(peakMb < baseMb + 150, `resident memory ${baseMb.toFixed(0)} MB -> peak ${peakMb.toFixed(0)} MB`);
    figure(
      `phrase flood (10,000 requests, 100 addresses): real user ${successes}/${attempts} logins ok during it; fetched + emergency phrase ok after; ` +
        `RSS ${baseMb.toFixed(0)} MB idle -> ${peakMb.toFixed(0)} MB peak; data folder +${diskGrowth} bytes`,
    );
  });

  it('providesign: the same body replayed 1,000 times stores one record; the node keeps answering', async () => {
    const c = new Client(node.url, '127.0.0.2', 16);
    const w = bitcoinWallet();
    const phrase = (await c.get('/id/loginphrase')).json.data;
    const body = { address: w.legacyid, message: phrase, signature: w.sign(phrase) };
    const first = (await c.post('/id/providesign', body)).json.data;
    const baseMb = node.rssMb();
    const { result: ids, peakMb } = await peakDuring(node, async () => {
      const seen = new Set<string>();
      await pool(Array.from({ length: 1_000 }), 16, async () => seen.add((await c.post('/id/providesign', body)).json.data._id));
      return seen;
    });
    assert.deepEqual([...ids], [first._id]);
    assert.equal((await c.get('/core/version')).json.status, 'success');
    c.close();
    const file = path.join(node.dataDir, 'identity', 'signatures.db');
    assert.equal(liveRows(file), 1, 'one record in the file');
    figure(`providesign replays (1,000): 1 record stored, signatures.db ${fs.statSync(file).size} bytes; RSS ${baseMb.toFixed(0)} -> ${peakMb.toFixed(0)} MB peak`);
  });

  it('session flood: 900 throwaway logins against maxSessions 300 keep 300 sessions and the operator\'s; loggedusers answers a bounded page', async () => {
    const real = new Client(node.url, '127.0.0.3');
    const opPhrase = (await real.get('/id/loginphrase')).json.data;
    const opSig = admin.sign(opPhrase);
    await real.post('/id/verifylogin', { legacyid: admin.legacyid, loginPhrase: opPhrase, signature: opSig });
    const op = authHeader(admin.legacyid, opSig, opPhrase);
    const baseMb = node.rssMb();
    const { peakMb } = await peakDuring(node, () =>
      pool(attackerAddresses(18, 250), 16, async (a) => {
        const c = new Client(node.url, a, 1);
        for (let i = 0; i < 50; i++) {
          const w = bitcoinWallet();
          const phrase = (await c.get('/id/loginphrase')).json.data;
          const r = await c.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature: w.sign(phrase) });
          assert.equal(r.json.status, 'success', r.text);
        }
        c.close();
      }),
    );
    const page = await real.get('/id/loggedusers', { legacyidauth: op });
    assert.equal(page.json.status, 'success', 'the operator\'s session was not evicted');
    assert.equal(page.json.data.length, 100, 'the default page');
    assert.equal(page.json.data[0].legacyid, admin.legacyid);
    const all = (await real.get('/id/loggedusers?limit=200&offset=0', { legacyidauth: op })).json.data;
    const rest = (await real.get('/id/loggedusers?limit=200&offset=200', { legacyidauth: op })).json.data;
    assert.equal(all.length, 200, 'a full page');
    assert.equal(all.length + rest.length, SESSIONS, 'sessions in all: the bound');
    real.close();
    await eventually(() => liveRows(path.join(node.dataDir, 'identity', 'sessions.db')) === SESSIONS, 'evictions written to the store');
    figure(
      `session flood (900 logins, maxSessions 300): 300 sessions kept, operator's kept; loggedusers default page ${page.text.length} bytes; ` +
        `RSS ${baseMb.toFixed(0)} -> ${peakMb.toFixed(0)} MB peak`,
    );
  });

  it('restart with 30,000 stored sessions: the node answers soon, holding at most maxSessions (10,000 by default)', async () => {
    const emptyMs = node.startMs;

    const dataDir = tempFolder();
    fs.mkdirSync(path.join(dataDir, 'identity'));
    const now = Date.now();
    const key = Buffer.alloc(32, 7);
    const rows = Array.from({ length: 30_000 }, (_, i) =>
      JSON.stringify({
        _id: `s${i}`,
        legacyid: bitcoinWalletId(i),
        loginPhrase: newPhrase(now - 60_000 + i, key),
        sigDigest: 'ab'.repeat(32),
        createdAt: now - 60_000 + i,
        expireAt: now + 14 * 24 * 3600_000,
      }),
    );
    fs.writeFileSync(path.join(dataDir, 'identity', 'sessions.db'), rows.join('\n') + '\n');
    const loaded = await start({ dataDir });
    const c = new Client(loaded.url);
    assert.equal((await c.get('/core/version')).json.status, 'success');
    c.close();
    const file = path.join(dataDir, 'identity', 'sessions.db');
    await eventually(() => liveRows(file) === 10_000, 'the 20,000 oldest to leave the store (after the node answers)', 60_000);
    await loaded.stop();
    assert.equal(liveRows(file), 10_000);
    figure(`restart with 30,000 stored sessions: answering after ${(loaded.startMs / 1000).toFixed(2)} s (a node with an empty data folder: ${(emptyMs / 1000).toFixed(2)} s, same run)`);
  });

  it('login sockets: 50 addresses try 1,000 sockets; each address gets its 16, a real page still opens its socket and gets its login, nobody else does', async () => {
    const sockets: WebSocket[] = [];
    const refusals: string[] = [];
    const answered = new Set<WebSocket>();
    const wsUrl = (phrase: string) => node.url.replace('http', 'ws') + '/ws/id/' + phrase;
    await pool(attackerAddresses(50, 310), 10, async (a) => {
      const c = new Client(node.url, a, 1);
      for (let i = 0; i < 20; i++) {
        const phrase = (await c.get('/id/loginphrase')).json.data;
        const ws = new WebSocket(wsUrl(phrase), { localAddress: a });
        ws.on('message', (m) => {
          refusals.push(JSON.parse(String(m)).data.name);
          answered.add(ws);
        });
        // A refusal is an envelope on an opened socket, then a close.
        await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
        sockets.push(ws);
      }
      c.close();
    });
    await eventually(() => refusals.length >= 50 * 4, '200 refusals');
    // Still waiting: open, and told nothing (a refused socket may not have seen its close frame yet).
    const open = sockets.filter((ws) => ws.readyState === WebSocket.OPEN && !answered.has(ws));
    assert.deepEqual([...new Set(refusals)], ['TooManySockets']);
    assert.equal(refusals.length, 50 * 4);
    assert.equal(open.length, 50 * 16);
    const refused = refusals.length;

    const real = new Client(node.url, '127.0.0.4');
    const phrase = (await real.get('/id/loginphrase')).json.data;
    const page = new WebSocket(wsUrl(phrase), { localAddress: '127.0.0.4' });
    const pageMessages: any[] = [];
    page.on('message', (m) => pageMessages.push(JSON.parse(String(m))));
    const closed = new Promise<number>((r) => page.once('close', (code) => r(code)));
    await new Promise((r, j) => (page.once('open', r), page.once('error', j)));
    const spy = new WebSocket(wsUrl(phrase), { localAddress: '127.0.3.3' });
    const spyMessage = await new Promise<any>((r) => spy.once('message', (m) => r(JSON.parse(String(m)))));
    assert.equal(spyMessage.data.name, 'PhraseWatched');
    const w = bitcoinWallet();
    await real.post('/id/verifylogin', { legacyid: w.legacyid, loginPhrase: phrase, signature: w.sign(phrase) });
    assert.equal(await closed, 4012);
    assert.equal(pageMessages[0].data.legacyid, w.legacyid);
    real.close();
    for (const ws of open) ws.terminate();
    spy.terminate();
    figure(`login sockets: 1,000 attempts from 50 addresses -> ${open.length} open, ${refused} refused (16 per address); the real page opened and got its login; the spy on its phrase was refused`);
  });
});

/** A distinct valid-looking id per stored session (ids are not checked at load). */
function bitcoinWalletId(i: number): string {
  return `1Sess${String(i).padStart(29, 'x')}`;
}
