/**
 * Eight real node processes on 127.0.0.2-9, each with its own data folder, seeded with the first: the mesh,
 * broadcast once to every node, a killed node that rejoins and catches up, peers that send bad frames,
 * app notices from a peer, and every peer route (happy path, levels, bad input).
 * Membership `nodelist`: each node has a node key listed at its IP in the node list a real regtest
 * litecoind answers through the TEST-ONLY corenode RPC double (test/node/doubles); the test's own peers
 * (127.0.0.1) have a listed key too. Unlisted keys, listed keys from another IP, a node list that cannot be
 * read and a node taken off the list are each tried.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { nodeSigner, type NodeSigner } from '../../lib/nodelist/signature.ts';
import { proofText } from '../../plugins/peers/membership.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble } from '../node/doubles/corenode-rpc-double.ts';
import { bitcoinWallet, login } from '../support/wallets.ts';
import { eventually } from '../support/wait.ts';
import { PeerNode } from '../../plugins/peers/protocol/node.ts';
import { generateKeys } from '../../plugins/peers/protocol/keys.ts';
import { wsTransport } from '../../plugins/peers/ws-transport.ts';
import { Cluster, data, type ClusterNode } from './cluster.ts';
import { Rogue } from './rogue.ts';

const PORT = 27600;
const newSigner = () => {
  const secret = crypto.randomBytes(32).toString('hex');
  return { secret, ...nodeSigner(secret) };
};
/** A hello's node-key proof by `s` (what plugins/peers/membership.ts makes). */
const proofBy = (s: NodeSigner) => (peerKey: string, nonce: string) => ({ pubKey: s.pubKey, sig: s.sign(proofText(peerKey, nonce)) });

describe('peer network: 8 node processes', function () {
  this.timeout(240_000);
  const operator = bitcoinWallet();
  const coreTeam = bitcoinWallet();
  const user = bitcoinWallet();
  let c: Cluster;
  let n: ClusterNode[];
  const auth: Record<string, Record<string, string>> = {};
  let key0 = '';
  let ltc: Regtest;
  let rpc: CorenodeRpcDouble;
  const nodeKeys = Array.from({ length: 8 }, newSigner);
  /** Listed at 127.0.0.1: the test's own peers. */
  const testKey = newSigner();
  const fullList = () => [
    // Both forms the list uses: `ip` and `ip:port`.
    ...nodeKeys.map((k, i) => ({ ip: i % 2 ? `127.0.0.${2 + i}` : `127.0.0.${2 + i}:${PORT}`, pubkey: k.pubKey })),
    { ip: '127.0.0.1', pubkey: testKey.pubKey },
  ];
  let list: unknown = fullList();
  let listReads = 0;

  const recent = async (node: ClusterNode) => data(await node.get('/core/networkhealth')).messages.recent as any[];
  const adminOn = async (node: ClusterNode) => ({ legacyidauth: (await login(node.client, operator)).header });

  before(async () => {
    ltc = await startLitecoind();
    rpc = await startCorenodeRpcDouble(ltc);
    // The double reads `nodeList` at each call: count the reads, and let a test make the list unreadable.
    Object.defineProperty(rpc, 'nodeList', { get: () => (listReads++, list) });
    c = new Cluster({
      n: 8,
      port: PORT,
      plugins: ['identity', 'daemon', 'peers'],
      operator: operator.legacyid,
      coreTeam: [coreTeam.legacyid],
      peers: { minimums: { outgoing: 3, uniqueOutgoingIps: 3, incoming: 2, uniqueIncomingIps: 2 }, maxBadFrames: 5, banMs: 600_000, membership: 'nodelist', nodeListCacheMs: 500 },
      extra: (i) => ({ daemon: { rpc: { url: rpc.url, user: ltc.user, password: ltc.password } }, peers: { nodePrivateKey: nodeKeys[i].secret } }),
    });
    n = c.nodes;
    await c.startAll();
    auth.admin = await adminOn(n[0]);
    auth.coreteam = { legacyidauth: (await login(n[0].client, coreTeam)).header };
    auth.user = { legacyidauth: (await login(n[0].client, user)).header };
  });

  after(async () => {
    await c?.stop();
    await rpc?.close();
    await ltc?.stop();
  });

  it('forms one connected mesh from a single seed', async () => {
    await eventually(
      async () => {
        const edges = await Promise.all(n.map(async (x) => [...data(await x.get('/core/connectedpeers')), ...data(await x.get('/core/incomingconnections'))] as string[]));
        if (edges.some((e, i) => new Set(e).size < 3 || data !== undefined && e.includes(n[i].ip))) return false;
        const seen = new Set([n[0].ip]);
        const queue = [0];
        while (queue.length) {
          const i = queue.shift()!;
          for (const ip of edges[i]) if (!seen.has(ip)) seen.add(ip), queue.push(Number(ip.split('.')[3]) - 2);
        }
        return seen.size === 8;
      },
      { what: 'a connected mesh of 8', everyMs: 300 },
    );
    const peers1 = data(await n[1].get('/core/peers'));
    key0 = peers1.find((p: any) => p.ip === n[0].ip).nodeKey;
    assert.match(key0, /^[0-9a-f]{64}$/);
    assert.equal(data(await n[0].get('/core/checkcommunication')), 'Communication to Core network is properly established');
  });

  it('membership: an unlisted key, a listed key from another IP and a hello without proof are refused (4006); a listed key joins', async () => {
    const url = `ws://${n[4].ip}:${PORT}/ws/core`;
    const refused = async (member?: (k: string, nonce: string) => unknown) => assert.rejects(new Rogue(url, 27990, member).join(), /closed during the handshake: 4006/);
    await refused(proofBy(newSigner())); // not in the list
    await refused(proofBy(nodeKeys[3])); // node 3's listed key, but from 127.0.0.1 (listed at 127.0.0.5)
    await refused(undefined); // no proof
    await refused((k, nonce) => ({ pubKey: testKey.pubKey, sig: newSigner().sign(proofText(k, nonce)) })); // a listed key, signed by another
    await refused((k) => proofBy(testKey)(k, 'another-nonce')); // a proof made for another link
    const hist = data(await n[4].get('/core/peerhistory?event=refused&code=4006', await adminOn(n[4])));
    assert.ok(hist.some((h: any) => h.ip === '127.0.0.1' && /is not listed at 127\.0\.0\.1/.test(h.reason)), JSON.stringify(hist));
    assert.ok(hist.some((h: any) => /no proof/.test(h.reason)) && hist.some((h: any) => /does not verify/.test(h.reason)));
    // Refusals are not misbehaviour: the IP is not banned, and a listed key from it joins.
    const ok = new Rogue(url, 27990, proofBy(testKey));
    await ok.join();
    ok.close();
    // Every node proved its listed key to its peers.
    const peers = data(await n[1].get('/core/peers'));
    assert.ok(peers.length > 0 && peers.every((p: any) => p.listedKey === nodeKeys[Number(p.ip.split('.')[3]) - 2].pubKey), JSON.stringify(peers.map((p: any) => [p.ip, p.listedKey])));
  });

  it('membership: a node whose node list cannot be read keeps its peers and admits nobody new (4007)', async () => {
    const target = n[6];
    const keysBefore = data(await target.get('/core/peers')).map((p: any) => p.nodeKey).sort();
    list = null; // the daemon answers no list
    try {
      // Every node re-checks its peers every 500 ms (a round reads the list once the last good read is
      // older than that): after three rounds each node's last good list is stale, and nobody was dropped.
      const reads = listReads;
      await eventually(() => listReads >= reads + 24, { what: 'three rounds of re-checks', everyMs: 100 });
      await assert.rejects(new Rogue(`ws://${target.ip}:${PORT}/ws/core`, 27989, proofBy(testKey)).join(), /closed during the handshake: 4007/);
      assert.deepEqual(data(await target.get('/core/peers')).map((p: any) => p.nodeKey).sort(), keysBefore);
    } finally {
      list = fullList();
    }
  });

  it('delivers a broadcast to every other node exactly once', async () => {
    const marker = `hello-${Date.now()}`;
    assert.equal(data(await n[0].post('/core/broadcastmessage', { marker }, auth.admin)), 'Message successfully broadcasted to Core network');
    const hits = (r: any[]) => r.filter((m) => m.type === 'broadcastmessage' && m.data?.marker === marker);
    await eventually(async () => (await Promise.all(n.slice(1).map(recent))).every((r) => hits(r).length === 1), { what: 'the message on all 7', everyMs: 200 });
    // A second message that has reached everyone was sent after the first: the copies of the first still
    // travelling by then would have been delivered; each node still holds exactly one.
    const after = `after-${Date.now()}`;
    data(await n[0].get(`/core/broadcastmessage/${after}`, auth.admin));
    await eventually(async () => (await Promise.all(n.slice(1).map(recent))).every((r) => r.some((m) => m.data === after)), { what: 'the second message', everyMs: 200 });
    for (const r of await Promise.all(n.slice(1).map(recent))) assert.equal(hits(r).length, 1);
    // The node that sent it does not receive it back; relays saw copies and dropped them.
    assert.equal(hits(await recent(n[0])).length, 0);
    const dups = await Promise.all(n.map(async (x) => data(await x.get('/core/networkhealth')).messages.duplicates as number));
    assert.ok(dups.reduce((a, b) => a + b) > 0, 'copies were dropped by the seen-cache');
  });

  it('a killed node restarts with its key, rejoins and catches up on what it missed', async () => {
    const seven = n[7];
    const keyBefore = data(await n[1].get('/core/peers')).find((p: any) => p.ip === seven.ip)?.nodeKey;
    await c.kill(seven);
    await eventually(async () => !data(await n[0].get('/core/incomingconnections')).includes(seven.ip) && !data(await n[0].get('/core/connectedpeers')).includes(seven.ip), {
      what: 'node 7 gone from node 0',
      everyMs: 200,
    });
    const missed = `missed-${Date.now()}`;
    data(await n[0].post('/core/broadcastmessage', missed, auth.admin));
    await eventually(async () => (await recent(n[6])).some((m) => m.data === missed), { what: 'the message on node 6', everyMs: 200 });
    c.start(seven);
    await c.ready(seven);
    await eventually(async () => (await recent(seven)).some((m) => m.data === missed), { what: 'node 7 caught up', everyMs: 300 });
    await eventually(async () => data(await n[1].get('/core/peers')).find((p: any) => p.ip === seven.ip)?.nodeKey === keyBefore, { what: 'node 7 back with its key', everyMs: 300 });
  });

  it('membership: a node taken off the list is dropped by its peers and refused until it is listed again', async () => {
    const seven = n[7];
    const links = async (x: ClusterNode) => [...data(await x.get('/core/connectedpeers')), ...data(await x.get('/core/incomingconnections'))] as string[];
    list = fullList().filter((e) => e.pubkey !== nodeKeys[7].pubKey);
    try {
      await eventually(async () => (await Promise.all(n.slice(0, 7).map(links))).every((l) => !l.includes(seven.ip)), { what: 'node 7 dropped by all', everyMs: 200 });
      const admin = await adminOn(n[0]);
      await eventually(async () => data(await n[0].get(`/core/peerhistory?event=refused&code=4006&ip=${seven.ip}`, admin)).length > 0, { what: 'node 7 refused by its seed', everyMs: 200 });
    } finally {
      list = fullList();
    }
    await eventually(async () => (await links(seven)).length > 0, { what: 'node 7 back once listed', everyMs: 200 });
  });

  it('a peer is located by the running notices every node hears, and forgotten at its removal notice', async () => {
    const keys = generateKeys();
    const peer = new PeerNode(keys, wsTransport({ localAddress: '127.0.0.1', maxPayload: 65536, path: '/ws/core', timeoutMs: 5000 }), { ip: '127.0.0.1', port: 25998, seeds: [], maxOutgoing: 1 }, {
      // Proves the test's listed key; takes the node it dials on trust.
      admission: { proof: proofBy(testKey), admit: async () => ({ ok: true as const, pubKey: '' }) },
      now: () => Date.now(),
      setTimer: (fn, ms) => {
        const t = setTimeout(fn, ms);
        return { clear: () => clearTimeout(t) };
      },
    });
    try {
      assert.equal(await peer.connect(`${n[3].ip}:${PORT}`), 'initiated');
      await eventually(() => peer.outgoing().length === 1, { what: 'the test peer joined' });
      peer.broadcast('apprunning', { ip: '127.0.0.1:25998', apps: [{ name: 'demoapp', hash: 'h1', runningSince: 1 }] });
      peer.broadcast('appinstalling', { ip: '127.0.0.1:25998', name: 'otherapp' });
      peer.broadcast('appinstallingerror', { ip: '127.0.0.1:25998', name: 'badapp', error: 'image not allowed' });
      await eventually(async () => (await Promise.all(n.map(async (x) => data(await x.get('/apps/location/demoapp'))))).every((l) => l.length === 1), { what: 'demoapp located on all 8', everyMs: 200 });
      const loc = data(await n[5].get('/apps/location/demoapp'))[0];
      assert.deepEqual({ name: loc.name, hash: loc.hash, ip: loc.ip, node: loc.node }, { name: 'demoapp', hash: 'h1', ip: '127.0.0.1:25998', node: keys.publicKey });
      assert.ok(data(await n[5].get('/apps/locations')).some((l: any) => l.name === 'demoapp'));
      await eventually(async () => data(await n[6].get('/apps/installinglocation/otherapp')).length === 1, { what: 'installing location' });
      assert.equal(data(await n[6].get('/apps/installinglocations')).length >= 1, true);
      await eventually(async () => data(await n[6].get('/apps/installingerrorslocation/badapp'))[0]?.error === 'image not allowed', { what: 'installing error location' });
      assert.equal(data(await n[6].get('/apps/installingerrorslocations')).length >= 1, true);
      assert.deepEqual(data(await n[6].get('/apps/location/nosuchapp')), []);
      peer.broadcast('appremoved', { ip: '127.0.0.1:25998', name: 'demoapp' });
      await eventually(async () => (await Promise.all(n.map(async (x) => data(await x.get('/apps/location/demoapp'))))).every((l) => l.length === 0), { what: 'demoapp forgotten on all 8', everyMs: 200 });
    } finally {
      peer.stop();
    }
  });

  it('a peer sending forged frames is disconnected, refused and listed as unstable', async () => {
    const target = n[1];
    const r = new Rogue(`ws://${target.ip}:${PORT}/ws/core`, 25991, proofBy(testKey));
    await r.join();
    await eventually(async () => data(await target.get('/core/peers/inbound')).some((p: any) => p.ip === '127.0.0.1'), { what: 'the rogue listed' });
    for (let i = 0; i < 3; i++) r.forged('gossip', { m: '{}', s: 'x', h: 0 });
    await eventually(async () => data(await target.get(`/core/peers/127.0.0.1:25991`))[0]?.badMessages === 3, { what: 'bad frames counted' });
    r.forged('ping', { ts: 1 });
    r.send('ping', { ts: 1 }); // well signed: not counted
    r.forged('ping', { ts: 1 });
    await eventually(() => r.closed, { what: 'the rogue closed' });
    assert.equal(r.closed!.code, 4010);
    const unstable = data(await target.get('/core/unstablenodes'));
    assert.ok(unstable.some((u: any) => u.ip === '127.0.0.1' && u.port === '25991'), JSON.stringify(unstable));
    const hist = data(await target.get('/core/peerhistory?event=misbehaved', await adminOn(target)));
    assert.ok(hist.some((h: any) => h.ip === '127.0.0.1' && /signature/.test(h.reason)));
    // Its IP is refused for a while.
    const again = new Rogue(`ws://${target.ip}:${PORT}/ws/core`, 25991, proofBy(testKey));
    await assert.rejects(again.join(), /4003/);
  });

  it('oversized, unknown, malformed, unsigned and binary frames are dropped and counted', async () => {
    const target = n[2];
    const r = new Rogue(`ws://${target.ip}:${PORT}/ws/core`, 25992, proofBy(testKey));
    await r.join();
    r.raw('x'.repeat(61_000)); // over maxFrameBytes (60,000), under the host's 64 KB
    r.send('teleport', { to: 'mars' }); // unknown type: refused before its signature is looked at
    r.raw('{not json');
    r.raw(JSON.stringify({ t: 'ping', d: '{"ts":1}' })); // unsigned
    await eventually(async () => data(await target.get(`/core/peers/127.0.0.1:25992`))[0]?.badMessages === 4, { what: '4 bad frames counted' });
    r.raw(Buffer.from([1, 2, 3])); // binary: the fifth
    await eventually(() => r.closed, { what: 'closed' });
    assert.equal(r.closed!.code, 4010);
    assert.ok(data(await target.get('/core/unstablenodes')).some((u: any) => u.port === '25992'));
    // A frame over the host's websocket limit (64 KB) closes the link at once (1009).
    const big = new Rogue(`ws://${n[4].ip}:${PORT}/ws/core`, 25993, proofBy(testKey));
    await big.join();
    big.raw('y'.repeat(70_000));
    await eventually(() => big.closed, { what: 'closed for size' });
    assert.equal(big.closed!.code, 1009);
  });

  describe('routes', () => {
    const levels = async (path: string) => {
      for (const who of [undefined, 'user'] as const) {
        const a = await n[0].get(path, who ? auth[who] : undefined);
        assert.equal(a.json?.data?.code, 401, `${path} as ${who ?? 'anonymous'}: ${a.text}`);
      }
    };

    it('addpeer, removepeer, removeincomingpeer: admin and core team only; bad input named', async () => {
      for (const p of ['/core/addpeer/127.0.0.3', '/core/removepeer/127.0.0.3', '/core/removeincomingpeer/127.0.0.3']) await levels(p);
      await eventually(async () => data(await n[0].get('/core/connectedpeers')).includes('127.0.0.3'), { what: 'node 0 dials node 1' });
      assert.equal(data(await n[0].get('/core/addpeer/127.0.0.3', auth.coreteam)), `Already connected to 127.0.0.3:${PORT}`);
      assert.match(data(await n[0].get('/core/removepeer/127.0.0.3', auth.admin)), /^Outgoing connection to 127\.0\.0\.3:27600 closed$/);
      const add = data(await n[0].get(`/core/addpeer/127.0.0.3:${PORT}`, auth.admin));
      assert.ok(add === `Outgoing connection to 127.0.0.3:${PORT} initiated` || add === `Already connected to 127.0.0.3:${PORT}`, add);
      await eventually(async () => data(await n[1].get('/core/incomingconnections')).includes('127.0.0.2'), { what: 'node 1 sees node 0 incoming' });
      assert.match(data(await n[1].get('/core/removeincomingpeer/127.0.0.2', { legacyidauth: (await login(n[1].client, operator)).header })), /^Incoming connection from 127\.0\.0\.2:27600 closed$/);
      const bad = async (p: string) => (await n[0].get(p, auth.admin)).json.data;
      assert.equal((await bad('/core/addpeer')).message, 'No IP address specified.');
      assert.equal((await bad('/core/addpeer/not-an-ip')).name, 'ValidationError');
      assert.match((await bad('/core/addpeer/300.1.1.1')).message, /not an IPv4 address/);
      assert.match((await bad('/core/addpeer/127.0.0.2:0')).message, /no valid port|this node/);
      assert.equal((await bad(`/core/addpeer/127.0.0.2:${PORT}`)).message, `127.0.0.2:${PORT} is this node`);
      assert.equal((await bad('/core/addpeer/127.0.0.1:25997')).code, 503);
      assert.equal((await bad('/core/removepeer/10.9.9.9')).code, 404);
      assert.equal((await bad('/core/removeincomingpeer/10.9.9.9')).code, 404);
      assert.equal((await bad('/core/removepeer')).message, 'No IP address specified.');
    });

    it('addoutgoingpeer (dial-back): the node at that IP only, for a listed ip:port only', async () => {
      /** A call from `from` (a local address this test may bind), as the node at that address makes it. */
      const from = (src: string, p: string) =>
        new Promise<{ status: number; json: any }>((resolve, reject) =>
          http
            .get(`${n[2].url}${p}`, { localAddress: src }, (res) => {
              let t = '';
              res.on('data', (d) => (t += d));
              res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(t) }));
            })
            .on('error', reject),
        );
      // Node 4 (127.0.0.6, listed with its port) asks node 2 (127.0.0.4) to dial it, from its own IP.
      const ok = await from('127.0.0.6', `/core/addoutgoingpeer/127.0.0.6:${PORT}`);
      assert.ok([`Outgoing connection to 127.0.0.6:${PORT} initiated`, `Already connected to 127.0.0.6:${PORT}`].includes(ok.json.data), JSON.stringify(ok.json));
      await eventually(async () => data(await n[2].get('/core/connectedpeers')).includes('127.0.0.6'), { what: 'node 2 dialled node 4' });
      // Another caller cannot make a node dial someone else.
      const other = await from('127.0.0.1', `/core/addoutgoingpeer/127.0.0.6:${PORT}`);
      assert.deepEqual([other.json.data.code, other.json.data.name], [403, 'Forbidden']);
      assert.match(other.json.data.message, /Only the node at 127\.0\.0\.6 may ask/);
      // The caller's own IP, at a port the list does not give it.
      const unlisted = await from('127.0.0.1', '/core/addoutgoingpeer/127.0.0.1:25990');
      assert.deepEqual([unlisted.json.data.code, unlisted.json.data.message], [403, '127.0.0.1:25990 is not a node of the node list']);
      assert.equal((await from('127.0.0.1', '/core/addoutgoingpeer')).json.data.message, 'No IP address specified.');
      assert.equal((await from('127.0.0.1', '/core/addoutgoingpeer/not-an-ip')).json.data.name, 'ValidationError');
    });

    it('broadcastmessage and its variants: GET and POST, admin and core team only, data required', async () => {
      for (const p of ['/core/broadcastmessage/x', '/core/broadcastmessagetooutgoing/x', '/core/broadcastmessagetoincoming/x']) await levels(p);
      for (const p of ['/core/broadcastmessage', '/core/broadcastmessagetooutgoing', '/core/broadcastmessagetoincoming']) {
        assert.equal((await n[0].post(p, { a: 1 })).json.data.code, 401);
        assert.equal(data(await n[0].post(p, { via: p }, auth.coreteam)), 'Message successfully broadcasted to Core network');
        assert.equal(data(await n[0].get(`${p}/${p.slice(6)}`, auth.admin)), 'Message successfully broadcasted to Core network');
        assert.equal((await n[0].post(p, '', auth.admin)).json.data.message, 'No message to broadcast attached.');
        assert.equal((await n[0].get(p, auth.admin)).json.data.message, 'No message to broadcast attached.');
      }
      await eventually(async () => (await recent(n[5])).some((m) => m.data === 'broadcastmessagetoincoming'), { what: 'a variant reaches every node' });
      assert.equal((await n[0].post('/core/broadcastmessage', 'z'.repeat(40_000), auth.admin)).status, 413);
      assert.equal((await n[0].get(`/core/broadcastmessage/${'q'.repeat(8001)}`, auth.admin)).json.data.name, 'ValidationError');
    });

    it('public read routes answer anyone and refuse a query string', async () => {
      for (const p of ['/core/connectedpeers', '/core/connectedpeersinfo', '/core/incomingconnections', '/core/incomingconnectionsinfo', '/core/peers', '/core/topology', '/core/networkhealth', '/core/unstablenodes', '/core/checkcommunication', '/apps/locations', '/apps/installinglocations', '/apps/installingerrorslocations']) {
        assert.equal((await n[3].get(p)).json.status, 'success', p);
        assert.equal((await n[3].get(`${p}?x=1`)).status, 400, p);
      }
      const info = data(await n[3].get('/core/connectedpeersinfo'));
      assert.deepEqual(Object.keys(info[0]).sort(), ['ip', 'lastPingTime', 'latency', 'port']);
      const peer = data(await n[3].get('/core/peers/outbound'))[0];
      for (const k of ['ip', 'port', 'direction', 'latency', 'missedPongs', 'lastPingTime', 'lastPongTime', 'connectedAt', 'uptime', 'source', 'isAlive', 'badMessages', 'capabilities', 'remoteClockOffsetMs', 'lastTransmissionDelay', 'messagesReceived', 'messagesSent', 'bytesReceived', 'bytesSent', 'remoteVersion', 'reconnects'])
        assert.ok(k in peer, k);
      assert.ok(data(await n[3].get('/core/peers/inbound')).every((p: any) => p.direction === 'inbound'));
      assert.equal(data(await n[3].get(`/core/peers/${peer.ip}:${peer.port}`))[0].ip, peer.ip);
      assert.equal((await n[3].get('/core/peers/sideways')).json.data.name, 'ValidationError');
      const topo = data(await n[3].get('/core/topology'));
      assert.ok(topo.reporters >= 4 && topo.knownPeers >= 3 && topo.topology[`${n[3].ip}:${PORT}`].outbound.length >= 1);
      const health = data(await n[3].get('/core/networkhealth'));
      assert.ok(['healthy', 'degraded'].includes(health.status) && typeof health.inSteadyState === 'boolean' && health.history.length > 0);
      assert.equal((await n[3].get('/apps/location/bad!name')).json.data.name, 'ValidationError');
      assert.equal((await n[3].get('/apps/location')).json.data.message, 'No Core App specified');
    });

    it('peerhistory: admin and core team, filters checked', async () => {
      await levels('/core/peerhistory');
      const all = data(await n[0].get('/core/peerhistory', auth.admin));
      assert.ok(all.length > 0 && all[0].time >= all.at(-1).time);
      assert.equal(data(await n[0].get('/core/peerhistory?limit=2', auth.coreteam)).length, 2);
      assert.ok(data(await n[0].get('/core/peerhistory?event=connected&ip=127.0.0.', auth.admin)).every((e: any) => e.event === 'connected'));
      assert.equal((await n[0].get('/core/peerhistory?event=bogus', auth.admin)).json.data.name, 'ValidationError');
      assert.equal((await n[0].get('/core/peerhistory?nope=1', auth.admin)).json.data.name, 'ValidationError');
    });

    it('checkcommunication names the shortfall against the configured minimums', async () => {
      // Node 0 with its links cut below the minimums (they come back by themselves).
      const admin = await adminOn(n[5]);
      for (const ip of data(await n[5].get('/core/connectedpeers'))) await n[5].get(`/core/removepeer/${ip}`, admin);
      for (const ip of data(await n[5].get('/core/incomingconnections'))) await n[5].get(`/core/removeincomingpeer/${ip}`, admin);
      const a = await n[5].get('/core/checkcommunication');
      if (a.json.status === 'error') assert.match(a.json.data.message, /^Not enough connections to the Core network: /);
      await eventually(async () => (await n[5].get('/core/checkcommunication')).json.status === 'success', { what: 'node 5 reconnected', everyMs: 300 });
    });
  });
});
