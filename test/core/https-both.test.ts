/**
 * HTTP and HTTPS at once (`api.tls.port`): HTTP on the API port and HTTPS on the next port (`next`) or a
 * chosen one, the same routes and websockets on both, one connection guard over both, the HTTPS port
 * among the node's own ports, and both listeners stopped together.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import plainHttp from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { WebSocket } from 'ws';
import { resolveConfig } from '../../core/config.ts';
import { Host } from '../../core/host.ts';
import { hasOpenssl, selfSigned } from '../support/certs.ts';
import { FIXTURE_PLUGINS, startFixtureNode } from '../support/fixture.ts';
import { tempDir, type TestNode } from '../support/node.ts';
import { eventually } from '../support/wait.ts';

const PORT = 30100;

function get(url: string, ca?: Buffer): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    (u.protocol === 'https:' ? https.get(url, { ca, agent: false }, onAnswer) : plainHttp.get(url, { agent: false }, onAnswer)).on('error', reject);
    function onAnswer(res: plainHttp.IncomingMessage) {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
    }
  });
}

/** A websocket's first message, and the socket. */
function socket(url: string, ca?: Buffer): Promise<{ ws: WebSocket; first: any }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { ca });
    ws.once('message', (m) => resolve({ ws, first: JSON.parse(String(m)) }));
    ws.once('error', reject);
  });
}

const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => (s.destroy(), resolve(false)));
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });

describe('HTTP and HTTPS at once (api.tls.port)', function () {
  let dir: string;
  let cert: { cert: string; key: string };
  let ca: Buffer;
  let node: TestNode;
  const http = `http://127.0.0.1:${PORT}`;
  const secure = `https://127.0.0.1:${PORT + 1}`;
  before(async function () {
    if (!hasOpenssl()) return this.skip();
    dir = tempDir('corenode-tls-both-');
    cert = selfSigned(dir);
    ca = fs.readFileSync(cert.cert);
    node = await startFixtureNode({ port: PORT, config: { api: { port: PORT, host: '127.0.0.1', tls: { ...cert, port: 'next' } } } });
  });
  after(async () => {
    await node?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the same routes on HTTP at the API port and on HTTPS at the next port', async () => {
    const [plain, tlsAnswer] = await Promise.all([get(`${http}/fixture/echo/x`), get(`${secure}/fixture/echo/x`, ca)]);
    assert.equal(plain.status, 200);
    assert.deepEqual(tlsAnswer.json.data.params, plain.json.data.params);
    // HTTPS-only routes pass on the TLS listener only.
    assert.equal((await get(`${http}/fixture/secure`)).status, 403);
    assert.equal((await get(`${secure}/fixture/secure`, ca)).json.status, 'success');
    assert.equal(node.host.httpsPort, PORT + 1);
  });

  it('counts the HTTPS port among the node’s own ports', () => {
    assert.match(node.host.ports.whose(PORT + 1) ?? '', /TLS/);
    assert.match(node.host.ports.whose(PORT) ?? '', /node API/);
  });

  it('upgrades websockets on both listeners', async () => {
    const a = await socket(`ws://127.0.0.1:${PORT}/fixture/ws/plain`);
    const b = await socket(`wss://127.0.0.1:${PORT + 1}/fixture/ws/secure`, ca);
    assert.deepEqual([a.first.data.hello, b.first.data.hello], ['plain', 'secure']);
    a.ws.terminate();
    b.ws.terminate();
  });

  it('one connection guard holds the connections of both listeners', async () => {
    await eventually(() => node.host.connections!.open === 0, { what: 'earlier connections closed' });
    const plain = net.connect({ host: '127.0.0.1', port: PORT });
    const secured = tls.connect({ host: '127.0.0.1', port: PORT + 1, ca, servername: 'localhost' });
    await eventually(() => node.host.connections!.open === 2, { what: 'both connections admitted' });
    plain.destroy();
    secured.destroy();
  });

  it('refuses plain HTTP on the TLS port and TLS on the plain port', async () => {
    await assert.rejects(get(`http://127.0.0.1:${PORT + 1}/fixture/echo`));
    await assert.rejects(get(`https://127.0.0.1:${PORT}/fixture/echo`, ca));
  });

  it('a chosen HTTPS port (not the next one) is served and reserved too', async () => {
    const other = await startFixtureNode({ config: { api: { port: 0, host: '127.0.0.1', tls: { ...cert, port: PORT + 5 } } } });
    try {
      assert.equal(other.host.httpsPort, PORT + 5);
      assert.equal((await get(`https://127.0.0.1:${PORT + 5}/fixture/echo/y`, ca)).json.data.params.a, 'y');
      assert.equal(other.host.ports.whose(PORT + 5), 'the node API over TLS (api.tls.port)');
    } finally {
      await other.close();
    }
  });

  it('a node whose HTTPS port is taken does not start, and leaves no listener behind', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(PORT + 7, '127.0.0.1', r));
    const config = resolveConfig(
      { api: { port: PORT + 6, host: '127.0.0.1', tls: { ...cert, port: 'next' } }, dataDir: tempDir(), pluginsDir: FIXTURE_PLUGINS, log: { level: 'silent' }, watch: false },
      'test config',
    );
    const host = new Host({ config });
    try {
      await assert.rejects(host.listen(), /api\.tls\.port: cannot listen for HTTPS \(listen EADDRINUSE/);
      assert.ok(await refused(PORT + 6), 'the HTTP listener is closed again');
    } finally {
      await host.close();
      blocker.close();
    }
  });

  it('stops both listeners together, closing the websockets of each', async () => {
    const a = await socket(`ws://127.0.0.1:${PORT}/fixture/ws/a`);
    const b = await socket(`wss://127.0.0.1:${PORT + 1}/fixture/ws/b`, ca);
    const closed = (ws: WebSocket) => new Promise((r) => ws.once('close', r));
    const both = Promise.all([closed(a.ws), closed(b.ws)]);
    await node.close();
    node = undefined as unknown as TestNode;
    await both;
    assert.deepEqual([await refused(PORT), await refused(PORT + 1)], [true, true]);
  });
});
