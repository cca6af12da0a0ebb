/**
 * TLS between nodes. First the shared helper (lib/node-http) against small servers in this process: the
 * order it tries (plain, then TLS on the same port when a TLS server closed the plain request; TLS first
 * where a node offered it, then plain), what it remembers, self-signed and wrongly named certificates,
 * IPv6. Then the node-to-node checks of the node plugin against an HTTPS-only node. Then four node
 * processes (membership open) on 127.0.0.2-5: HTTPS only, HTTP and HTTPS, HTTP only, and HTTPS only with a
 * certificate for another name; they link to each other both ways, `/core/peers` says which links are TLS,
 * and a broadcast reaches all.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { TlsOffers, urlHost } from '../../lib/node-http/offers.ts';
import { callNode } from '../../lib/node-http/request.ts';
import { peerLink } from '../../plugins/filesync/peers.ts';
import { ownPorts } from '../../plugins/node/upnp.ts';
import { hasOpenssl, selfSigned } from '../support/certs.ts';
import type { Client } from '../support/node.ts';
import { httpsClientAt, tempDir, type TestNode } from '../support/node.ts';
import { eventually } from '../support/wait.ts';
import { bitcoinWallet, login } from '../support/wallets.ts';
import { asOperator, startOpsNode } from '../node/support.ts';
import { Cluster, data, type ClusterNode } from './cluster.ts';

/** Ports of this file: small servers 30130-30139, in-process nodes 30140-30144, the cluster 30120 (and 30121). */
const STUB = 30130;
const NODE = 30140;
const CLUSTER = 30120;

/** A server answering `name` to everything, counting the plain requests that reached it as TLS errors. */
async function stub(kind: 'plain' | 'tls', port: number, cert: { cert: string; key: string } | null, host = '127.0.0.1', status = 200) {
  const answer = (_q: http.IncomingMessage, r: http.ServerResponse) => {
    r.statusCode = status;
    r.end(JSON.stringify({ status: 'success', data: kind }));
  };
  const server = kind === 'tls' ? https.createServer({ cert: fs.readFileSync(cert!.cert), key: fs.readFileSync(cert!.key) }, answer) : http.createServer(answer);
  const stats = { tlsErrors: 0 };
  server.on('tlsClientError', () => stats.tlsErrors++);
  await new Promise<void>((r) => server.listen(port, host, r));
  return { server, stats, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) };
}


describe('TLS between nodes', function () {
  this.timeout(180_000);
  let dir: string;
  let cert: { cert: string; key: string };
  let otherName: { cert: string; key: string };
  before(function () {
    if (!hasOpenssl()) return this.skip();
    dir = tempDir('corenode-peers-tls-');
    cert = selfSigned(dir, { name: 'loopback', san: 'IP:127.0.0.1,IP:127.0.0.2,IP:127.0.0.3,IP:::1,DNS:localhost' });
    otherName = selfSigned(dir, { name: 'other', cn: 'other.example', san: 'DNS:other.example' });
  });
  after(() => dir && fs.rmSync(dir, { recursive: true, force: true }));

  describe('the shared helper (lib/node-http)', () => {
    it('an address offering nothing known: plain first, then TLS on the same port when a TLS server closed the plain request; remembered', async () => {
      const s = await stub('tls', STUB, cert);
      const offers = new TlsOffers();
      try {
        const a = await callNode('127.0.0.1', STUB, '/x', { timeoutMs: 3000 }, offers);
        assert.deepEqual([a.status, a.secure, JSON.parse(a.text).data], [200, true, 'tls']);
        assert.equal(s.stats.tlsErrors, 1, 'the plain request met the TLS server once');
        assert.equal(offers.tlsPort('127.0.0.1', STUB), STUB);
        const b = await callNode('127.0.0.1', STUB, '/x', { timeoutMs: 3000 }, offers);
        assert.equal(b.secure, true);
        assert.equal(s.stats.tlsErrors, 1, 'the next call went over TLS at once');
      } finally {
        await s.close();
      }
    });

    it('a node that offered TLS on another port is reached there first; plain when TLS fails there, and plain first for a while after', async () => {
      const plain = await stub('plain', STUB + 1, null);
      const secure = await stub('tls', STUB + 2, otherName);
      const offers = new TlsOffers();
      try {
        assert.equal(JSON.parse((await callNode('127.0.0.1', STUB + 1, '/', { timeoutMs: 3000 }, offers)).text).data, 'plain');
        offers.offer('127.0.0.1', STUB + 1, STUB + 2);
        // A certificate for another name is taken: the node is who its signatures say, not its certificate.
        const a = await callNode('127.0.0.1', STUB + 1, '/', { timeoutMs: 3000 }, offers);
        assert.deepEqual([a.secure, a.url], [true, `https://127.0.0.1:${STUB + 2}/`]);
        await secure.close();
        const b = await callNode('127.0.0.1', STUB + 1, '/', { timeoutMs: 3000 }, offers);
        assert.deepEqual([b.secure, JSON.parse(b.text).data], [false, 'plain']);
        assert.equal(offers.plan('127.0.0.1', STUB + 1)[0].secure, false, 'plain goes first after TLS failed');
      } finally {
        await plain.close();
        await secure.close().catch(() => undefined);
      }
    });

    it('an answer of any status is the node’s answer (no other way is tried); no answer at all is an error naming the URL', async () => {
      const s = await stub('plain', STUB + 3, null, '127.0.0.1', 503);
      const offers = new TlsOffers();
      try {
        const a = await callNode('127.0.0.1', STUB + 3, '/', { timeoutMs: 3000 }, offers);
        assert.deepEqual([a.status, a.secure, offers.size], [503, false, 0]);
      } finally {
        await s.close();
      }
      await assert.rejects(callNode('127.0.0.1', STUB + 3, '/core/version', { timeoutMs: 3000 }, offers), new RegExp(`http://127\\.0\\.0\\.1:${STUB + 3}/core/version: connect ECONNREFUSED`));
    });

    it('a TLS port that takes the connection and never answers: plain after the timeout; a plain one: a TimeoutError', async () => {
      // Reads and drops what comes (a socket never read never sees the client's close), answers nothing.
      const silent = net.createServer((sock) => void sock.on('error', () => undefined).resume());
      await new Promise<void>((r) => silent.listen(STUB + 6, '127.0.0.1', r));
      const plain = await stub('plain', STUB + 7, null);
      const offers = new TlsOffers();
      try {
        offers.offer('127.0.0.1', STUB + 7, STUB + 6);
        const a = await callNode('127.0.0.1', STUB + 7, '/', { timeoutMs: 300 }, offers);
        assert.deepEqual([a.secure, JSON.parse(a.text).data], [false, 'plain']);
        await assert.rejects(callNode('127.0.0.1', STUB + 6, '/v', { timeoutMs: 300 }, new TlsOffers()), (e: Error) => e.name === 'TimeoutError' && e.message === `http://127.0.0.1:${STUB + 6}/v: no answer within 300 ms`);
      } finally {
        await plain.close();
        await new Promise((r) => silent.close(r));
      }
    });

    it('IPv6 addresses go in brackets', async function () {
      assert.equal(urlHost('::1'), '[::1]');
      assert.equal(urlHost('[::1]'), '[::1]');
      assert.equal(urlHost('10.0.0.1'), '10.0.0.1');
      let s;
      try {
        s = await stub('tls', STUB + 4, cert, '::1');
      } catch {
        return this.skip(); // no IPv6 loopback here
      }
      try {
        const a = await callNode('::1', STUB + 4, '/', { timeoutMs: 3000 }, new TlsOffers());
        assert.deepEqual([a.secure, a.url], [true, `https://[::1]:${STUB + 4}/`]);
      } finally {
        await s.close();
      }
    });

    it('remembers a bounded number of addresses, the oldest forgotten first', () => {
      const offers = new TlsOffers(() => Date.now(), 3);
      for (let i = 1; i <= 5; i++) offers.offer(`10.0.0.${i}`, 16127, 16128);
      assert.equal(offers.size, 3);
      assert.deepEqual([offers.tlsPort('10.0.0.1', 16127), offers.tlsPort('10.0.0.5', 16127)], [0, 16128]);
      offers.offer('10.0.0.6', 16127, 70000);
      assert.equal(offers.tlsPort('10.0.0.6', 16127), 0, 'a port out of range is no offer');
    });

    it('file sync reaches another node over HTTPS (scheme auto)', async () => {
      const id = 'ABCDEFG-ABCDEFG-ABCDEFG-ABCDEFG-ABCDEFG-ABCDEFG-ABCDEFG-ABCDEFG';
      const server = https.createServer({ cert: fs.readFileSync(otherName.cert), key: fs.readFileSync(otherName.key) }, (_q, r) => r.end(JSON.stringify({ status: 'success', data: id })));
      await new Promise<void>((r) => server.listen(STUB + 5, '127.0.0.1', r));
      try {
        assert.equal(await peerLink({ scheme: 'auto', defaultApiPort: 16127, timeoutMs: 3000 }).deviceId(`127.0.0.1:${STUB + 5}`), id);
      } finally {
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
      }
    });
  });

  describe('node-to-node checks', () => {
    let checker: TestNode & { root: string };
    let target: TestNode & { root: string };
    before(async () => {
      checker = await startOpsNode({ node: { availability: { timeoutMs: 3000 }, ports: { touchGapMs: 10 } } });
      // HTTPS only, on its API port (the node plugin's routes, /core/uptime among them).
      target = await startOpsNode({ port: NODE, config: { api: { port: NODE, host: '127.0.0.1', tls: otherName } } });
    });
    after(async () => {
      await checker?.close();
      await target?.close();
    });

    it('keepupnpportsopen reaches an HTTPS-only node at its API port (self-signed, another name)', async () => {
      const a = await checker.post('/core/keepupnpportsopen', { ip: '127.0.0.1', apiPort: NODE, ports: [NODE + 4] }, asOperator());
      assert.equal(a.json?.status, 'success', a.text);
      assert.equal(a.json.data.message, `Ports of 127.0.0.1 are being kept open: ${NODE + 4}`);
      const none = await checker.post('/core/keepupnpportsopen', { ip: '127.0.0.1', apiPort: NODE + 3, ports: [NODE + 4] }, asOperator());
      assert.deepEqual([none.json.data.code, none.json.data.name], [503, 'NotReachable']);
    });
  });

  it('UPnP keeps the HTTPS port mapped too when it is not API + 1 (the reference maps API + 1 as its SSL port)', () => {
    const mapped = (https: number) => ownPorts(16127, https).map((p) => `${p.port}/${p.description}`);
    assert.deepEqual(mapped(0), ['16127/Core_API', '16128/Core_API_SSL', '16126/Core_Home_UI', '16129/Core_Syncthing']);
    assert.deepEqual(mapped(16128), mapped(0));
    assert.deepEqual(mapped(16127), mapped(0));
    assert.deepEqual(mapped(8443).slice(4), ['8443/Core_API_SSL']);
  });

  describe('four node processes: HTTPS only, HTTP and HTTPS, HTTP only, HTTPS only under another name', () => {
    const operator = bitcoinWallet();
    let c: Cluster;
    let n: ClusterNode[];
    /** Which nodes serve TLS (every link to them should be TLS once the dialler knows). */
    const offersTls = [true, true, false, true];
    const ipOf = (i: number) => `127.0.0.${2 + i}`;
    const admin: Record<number, Record<string, string>> = {};
    const peers = async (node: ClusterNode) => data(await node.get('/core/peers')) as { ip: string; port: number; direction: string; tls: boolean }[];
    const meshed = async () => {
      for (const node of n) {
        const p = await peers(node);
        const others = new Set(n.filter((o) => o !== node).map((o) => o.ip));
        for (const direction of ['outbound', 'inbound'])
          if (!same(new Set(p.filter((r) => r.direction === direction).map((r) => r.ip)), others)) return false;
      }
      return true;
    };
    const same = (a: Set<string>, b: Set<string>) => a.size === b.size && [...a].every((x) => b.has(x));

    before(async () => {
      c = new Cluster({
        n: 4,
        port: CLUSTER,
        plugins: ['identity', 'peers'],
        operator: operator.legacyid,
        peers: { membership: 'open' },
        extra: (i) => ({
          api: {
            port: CLUSTER,
            host: ipOf(i),
            ...(i === 0 ? { tls: cert } : i === 1 ? { tls: { ...cert, port: 'next' } } : i === 3 ? { tls: otherName } : {}),
          },
        }),
        client: (i, ip, port) => (i === 0 || i === 3 ? httpsClientAt(`https://${ip}:${port}`) : undefined) as Client,
      });
      n = c.nodes;
      await c.startAll();
      for (const node of n) admin[node.i] = { legacyidauth: (await login(node.client, operator)).header };
    });
    after(async () => {
      await c?.stop();
    });

    it('link to each other both ways (first contact: plain, then TLS on the same port for an HTTPS-only node)', async () => {
      await eventually(meshed, { what: 'a full mesh, both directions', everyMs: 300 });
      // Links to the HTTPS-only nodes can only be TLS; links to the HTTP-only node only plain.
      for (const node of n) {
        for (const r of await peers(node)) {
          const to = r.direction === 'outbound' ? Number(r.ip.split('.')[3]) - 2 : node.i;
          if (to !== 1) assert.equal(r.tls, offersTls[to], `node ${node.i}: ${r.direction} ${r.ip} tls ${r.tls}`);
        }
      }
    });

    it('a node serving both: a link opened plain is replaced by a TLS one once its hello said where, not counted as a disconnect', async () => {
      await eventually(
        async () => {
          if (!(await meshed())) return false;
          for (const node of n.filter((x) => x.i !== 1)) {
            const out = (await peers(node)).filter((r) => r.direction === 'outbound' && r.ip === n[1].ip);
            if (out.length !== 1 || !out[0].tls) return false;
          }
          const inbound = (await peers(n[1])).filter((r) => r.direction === 'inbound');
          return inbound.length === 3 && inbound.every((r) => r.tls);
        },
        { what: 'every link to node 1 over TLS', everyMs: 300 },
      );
      // Replaced links are in the history (4013), on both ends, and nobody is listed as unstable for them.
      const replaced = async (node: ClusterNode) => (data(await node.get('/core/peerhistory?code=4013', admin[node.i])) as { reason: string }[]).map((e) => e.reason);
      assert.ok((await replaced(n[1])).every((r) => r === 'replaced by a TLS link'));
      for (const node of n) assert.deepEqual(data(await node.get('/core/unstablenodes')), []);
      // Node 1's own links: TLS to the nodes serving it, plain to the HTTP-only one.
      for (const r of (await peers(n[1])).filter((x) => x.direction === 'outbound')) assert.equal(r.tls, offersTls[Number(r.ip.split('.')[3]) - 2], r.ip);
    });

    it('a broadcast from the HTTP-only node reaches every other node', async () => {
      const marker = `tls-${Date.now()}`;
      assert.equal(data(await n[2].post('/core/broadcastmessage', { marker }, admin[2])), 'Message successfully broadcasted to Core network');
      for (const node of n.filter((x) => x.i !== 2))
        await eventually(async () => (data(await node.get('/core/networkhealth')).messages.recent as any[]).some((m) => m.data?.marker === marker), { what: `node ${node.i} got the broadcast` });
    });
  });
});
