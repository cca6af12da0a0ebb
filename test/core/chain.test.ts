/** The per-route chain over real HTTP: each refusal the host makes before a handler, and how bodies are read. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import { WebSocket } from 'ws';
import { resolveConfig } from '../../core/config.ts';
import { Host } from '../../core/host.ts';

import { tempDir, type TestNode } from '../support/node.ts';
import { FIXTURE_MANIFESTS, FIXTURE_PLUGINS, eventually, manifestsDir, startFixtureNode } from '../support/fixture.ts';

/** Speak HTTP/1.1 on a raw socket, so a test controls exactly how much of a body is sent. */
function rawExchange(port: number, head: string, send: (sock: net.Socket) => void): Promise<{ response: string; sent: number; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let response = '';
    let sent = 0;
    const write = sock.write.bind(sock);
    (sock as any).write = (chunk: any, ...rest: any[]) => ((sent += Buffer.byteLength(chunk)), write(chunk, ...rest));
    sock.on('data', (d) => (response += d.toString('latin1')));
    sock.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' || e.code === 'EPIPE' ? undefined : reject(e)));
    sock.on('close', () => resolve({ response, sent, closedByServer: true }));
    sock.on('connect', () => {
      sock.write(head);
      send(sock);
    });
  });
}

const status = (response: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1]);
const bodyOf = (response: string) => JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4));

describe('host chain', () => {
  let node: TestNode;
  const handled: string[] = [];
  before(async () => {
    node = await startFixtureNode({ onHandler: (id) => handled.push(id) });
  });
  after(() => node.close());

  describe('envelope and errors', () => {
    it('wraps handler data in the envelope and hands the route meta to the handler', async () => {
      const res = await node.get('/fixture/echo/one/two?x=1');
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, {
        status: 'success',
        data: { params: { a: 'one', b: 'two' }, query: { x: '1' }, body: null, caller: null, route: 'fixture.echo', meta: { color: 'blue' } },
      });
    });

    it('keeps repeated and bracketed query keys as plain strings', async () => {
      const res = await node.get('/fixture/echo?a=1&a=2&b[$ne]=x');
      assert.deepEqual(res.json.data.query, { a: '1', 'b[$ne]': 'x' });
      const odd = await node.get('/fixture/echo?constructor=1&__proto__=2&toString=3&hasOwnProperty=4');
      assert.deepEqual(odd.json.data.query, JSON.parse('{"constructor":"1","__proto__":"2","toString":"3","hasOwnProperty":"4"}'));
    });

    it('answers a handler crash as an envelope error at HTTP 200, never a 500', async () => {
      const res = await node.get('/fixture/crash');
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, { status: 'error', data: { code: 500, name: 'InternalError', message: 'The node could not complete the request; the error is logged' } });
      assert.ok(!res.text.includes('nobody typed'), 'the library message stays in the log');
    });

    it('validates and coerces path and query input against the route schemas (envelope code 400)', async () => {
      const ok = await node.get('/fixture/typed/5?limit=3');
      assert.deepEqual(ok.json.data.params, { n: 5 });
      assert.deepEqual(ok.json.data.query, { limit: 3 });
      for (const p of ['/fixture/typed/abc', '/fixture/typed/0', '/fixture/typed/5?limit=11', '/fixture/typed/5?other=1']) {
        const res = await node.get(p);
        assert.equal(res.status, 200, p);
        assert.equal(res.json.status, 'error', p);
        assert.equal(res.json.data.code, 400, p);
        assert.equal(res.json.data.name, 'ValidationError', p);
      }
    });
  });

  describe('wire statuses', () => {
    it('400: a query string on a route that takes none', async () => {
      const before = handled.length;
      const res = await node.get('/fixture/noquery?x=1');
      assert.equal(res.status, 400);
      assert.equal(res.json.status, 'error');
      assert.equal(res.json.data.code, 400);
      assert.equal(handled.length, before, 'the handler never ran');
      assert.equal((await node.get('/fixture/noquery')).json.status, 'success');
      assert.equal((await node.get('/fixture/noquery?')).json.status, 'success', 'an empty query is no query');
    });

    it('403: an HTTPS-only route over plain HTTP', async () => {
      const res = await node.get('/fixture/secure');
      assert.equal(res.status, 403);
      assert.deepEqual(res.json.data, { code: 403, name: 'ForbiddenProtocol', message: 'HTTPS is required for this endpoint; plain HTTP is refused' });
    });

    it('404: unknown routes and methods, in the envelope', async () => {
      for (const [m, p] of [['GET', '/nosuch'], ['GET', '/fixture'], ['POST', '/fixture/echo'], ['DELETE', '/fixture/noquery'], ['GET', '/fixture/ws/x']]) {
        const res = await node.request(m, p);
        assert.equal(res.status, 404, `${m} ${p}`);
        assert.equal(res.json.status, 'error');
        assert.equal(res.json.data.code, 404);
      }
    });

    it('410: a removed route answers body code 410 at HTTP 200', async () => {
      const res = await node.get('/fixture/old');
      assert.equal(res.status, 200);
      assert.equal(res.json.status, 'error');
      assert.equal(res.json.data.code, 410);
      assert.match(res.json.data.message, /removed in 8\.19\.0/);
    });

    it('503: a gated route until its condition holds', async () => {
      const res = await node.get('/fixture/gated');
      assert.equal(res.status, 503);
      assert.equal(res.json.data.code, 503);
      assert.match(res.json.data.message, /fixture\.policy/);
      node.host.gates.set('fixture.policy', true);
      try {
        assert.equal((await node.get('/fixture/gated')).json.status, 'success');
      } finally {
        node.host.gates.set('fixture.policy', false);
      }
    });

    it('503: every route while the node is booting, then served', async () => {
      const dataDir = tempDir();
      const config = resolveConfig(
        { dataDir, manifestsDir: manifestsDir(['host', `${FIXTURE_MANIFESTS}/fixture.yaml`]), pluginsDir: FIXTURE_PLUGINS, log: { level: 'silent' }, watch: false },
        'test',
      );
      const host = new Host({ config });
      const port = await host.listen(0, '127.0.0.1');
      try {
        const res = await fetch(`http://127.0.0.1:${port}/fixture/echo`);
        assert.equal(res.status, 503);
        assert.equal(res.headers.get('retry-after'), '1');
        assert.deepEqual((await res.json()).data.name, 'Booting');
        await host.start();
        assert.equal((await fetch(`http://127.0.0.1:${port}/fixture/echo`)).status, 200);
      } finally {
        await host.close();
      }
    });

    it('413: a declared Content-Length over the limit is refused without reading the body', async () => {
      const port = Number(new URL(node.url).port);
      const declared = 10 * 1024 * 1024;
      const before = handled.length;
      const out = await rawExchange(
        port,
        `POST /fixture/rawjson HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${declared}\r\n\r\n`,
        (s) => s.write('{"a":'),
      );
      assert.equal(status(out.response), 413);
      assert.match(out.response, /\r\nconnection: close\r\n/i);
      assert.equal(bodyOf(out.response).data.code, 413);
      assert.ok(out.sent < 1024, 'the client sent a sliver of what it declared');
      assert.ok(out.closedByServer);
      assert.equal(handled.length, before);
    });

    it('413: a chunked body is cut off once it passes the limit', async () => {
      const port = Number(new URL(node.url).port);
      const chunk = 'x'.repeat(400);
      const out = await rawExchange(port, `POST /fixture/raw HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`, (s) => {
        // Keep sending until the server answers: it must answer long before the body ends (it never does).
        const timer = setInterval(() => {
          if (s.destroyed || s.writableEnded) return clearInterval(timer);
          s.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        }, 5);
        s.on('close', () => clearInterval(timer));
      });
      assert.equal(status(out.response), 413);
      assert.match(out.response, /\r\nconnection: close\r\n/i);
      assert.equal(bodyOf(out.response).data.name, 'PayloadTooLarge');
      assert.ok(out.sent < 64 * 1024);
    });

    it('413 before the body is sent when the client asks Expect: 100-continue', async () => {
      const port = Number(new URL(node.url).port);
      const refused = await rawExchange(
        port,
        `POST /fixture/raw HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n`,
        () => undefined, // sends no body: it waits for 100 Continue, which never comes
      );
      assert.equal(status(refused.response), 413);
      assert.ok(!refused.response.includes('100 Continue'));
      const accepted = await rawExchange(
        port,
        `POST /fixture/raw HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\nConnection: close\r\n\r\n`,
        (s) => s.once('data', (d) => (String(d).startsWith('HTTP/1.1 100 Continue') ? s.write('abc') : undefined)),
      );
      assert.match(accepted.response, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 OK/);
      assert.equal(bodyOf(accepted.response.slice(accepted.response.indexOf('HTTP/1.1 200'))).data, 3);
    });

    it('HEAD answers like GET without a body', async () => {
      const res = await node.request('HEAD', '/fixture/echo');
      assert.equal(res.status, 200);
      assert.equal(res.text, '');
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    });

    it('413: through fetch, for raw, text and multipart parsers', async () => {
      assert.equal((await node.post('/fixture/raw', 'x'.repeat(1025))).status, 413);
      assert.equal((await node.post('/fixture/raw', 'x'.repeat(1024))).json.data, 1024);
      assert.equal((await node.post('/fixture/text', 'x'.repeat(17))).status, 413);
      const form = new FormData();
      form.append('file', new Blob(['y'.repeat(4096)]), 'big.bin');
      assert.equal((await node.request('POST', '/fixture/upload', { body: form })).status, 413);
      const small = new FormData();
      small.append('name', 'v');
      small.append('file', new Blob(['y']), 'f.bin');
      const ok = await node.request('POST', '/fixture/upload', { body: small });
      assert.deepEqual(ok.json.data.fields, { name: 'v' });
      assert.deepEqual(ok.json.data.files, ['file']);
      assert.equal(ok.json.data.paths.length, 1);
      await eventually(() => !fs.existsSync(ok.json.data.paths[0])); // the temp file goes with the request
      const fields = new FormData();
      fields.append('text', 'z'.repeat(4096));
      assert.equal((await node.request('POST', '/fixture/upload', { body: fields })).status, 413, 'text fields count too');
    });
  });

  describe('bodies', () => {
    it('raw-json: parses JSON sent as text/plain and as application/json alike', async () => {
      for (const type of ['text/plain', 'application/json', 'application/x-www-form-urlencoded', '']) {
        const res = await node.request('POST', '/fixture/rawjson', { body: '{"a":1}', headers: type ? { 'content-type': type } : {} });
        assert.equal(res.status, 200, type);
        assert.deepEqual(res.json.data.body, { a: 1 }, type);
      }
    });

    it('raw-json: an empty body is {}, bad JSON and schema mismatches answer envelope 400', async () => {
      assert.deepEqual((await node.post('/fixture/rawjson', '')).json.data.body, {});
      const bad = await node.post('/fixture/rawjson', '{"a":');
      assert.equal(bad.status, 200);
      assert.deepEqual(bad.json.data, { code: 400, name: 'BadRequest', message: 'The request body is not valid JSON' });
      const arr = await node.post('/fixture/rawjson', '[1,2]');
      assert.equal(arr.json.data.name, 'ValidationError');
    });

    it('json: takes application/json only; text answers envelope 400', async () => {
      const ok = await node.request('POST', '/fixture/json', { body: '{"b":2}', headers: { 'content-type': 'application/json' } });
      assert.deepEqual(ok.json.data.body, { b: 2 });
      const refused = await node.post('/fixture/json', '{"b":2}');
      assert.equal(refused.json.data.code, 400);
    });

    it('text: hands the body over as a string', async () => {
      assert.equal((await node.post('/fixture/text', 'hello')).json.data.body, 'hello');
    });
  });

  describe('aliases and headers', () => {
    it('serves aliases and alias prefixes on the same handler', async () => {
      for (const p of ['/fixture/echo/a', '/fixture-echo/a', '/fx/echo/a']) {
        const res = await node.get(p);
        assert.equal(res.json.data.route, 'fixture.echo', p);
        assert.deepEqual(res.json.data.params, { a: 'a' }, p);
      }
      assert.equal((await node.get('/fx/noquery?x=1')).status, 400, 'an alias carries the route rules');
    });

    it('marks deprecated routes with a Deprecation header', async () => {
      assert.equal((await node.get('/fixture/deprecated')).headers.get('deprecation'), 'true');
      assert.equal((await node.get('/fixture/echo')).headers.get('deprecation'), null);
    });

    it('answers CORS preflights allowing legacyidauth from configured origins only', async () => {
      // The fixture node is started with the default api.corsOrigins: this node's UI (port - 1) and the gateway.
      const gateway = 'https://home.runoncore.io';
      const res = await node.request('OPTIONS', '/fixture/level/user', {
        headers: { origin: gateway, 'access-control-request-method': 'GET', 'access-control-request-headers': 'legacyidauth' },
      });
      assert.equal(res.status, 204);
      assert.equal(res.headers.get('access-control-allow-origin'), gateway);
      assert.match(res.headers.get('access-control-allow-headers') ?? '', /\blegacyidauth\b/);
      assert.match(res.headers.get('access-control-allow-methods') ?? '', /POST/);
      const get = await node.get('/fixture/echo', { origin: gateway });
      assert.equal(get.headers.get('access-control-allow-origin'), gateway);
      assert.match(get.headers.get('access-control-expose-headers') ?? '', /Location/);
      for (const origin of ['https://wallet.example', 'null', 'http://127.0.0.1']) {
        const pre = await node.request('OPTIONS', '/fixture/level/user', {
          headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'legacyidauth' },
        });
        assert.equal(pre.headers.get('access-control-allow-origin'), null, origin);
        assert.equal(pre.headers.get('access-control-allow-headers'), null, origin);
        assert.equal((await node.get('/fixture/echo', { origin })).headers.get('access-control-allow-origin'), null, origin);
      }
    });
  });

  describe('streams', () => {
    it('SSE: a stream route writes events then ends', async () => {
      const res = await fetch(`${node.url}/fixture/stream`);
      assert.equal(res.headers.get('content-type'), 'text/event-stream');
      const text = await res.text();
      assert.equal(text.match(/event: tick/g)?.length, 3);
      assert.match(text, /id: 3\ndata: \{"i":3\}/);
    });

    it('WS: upgrades on a websocket route and hands the socket to the handler', async () => {
      const ws = new WebSocket(`${node.url.replace('http', 'ws')}/fx/ws/alice`);
      const first = await new Promise<string>((resolve, reject) => {
        ws.once('message', (m) => resolve(String(m)));
        ws.once('error', reject);
      });
      assert.deepEqual(JSON.parse(first), { status: 'success', data: { hello: 'alice' } });
      ws.send('ping');
      assert.equal(await new Promise<string>((resolve) => ws.once('message', (m) => resolve(String(m)))), 'ping');
      ws.close();
    });

    it('WS: refuses unknown websocket paths with a plain 404', async () => {
      const ws = new WebSocket(`${node.url.replace('http', 'ws')}/fixture/nosuch`);
      const code = await new Promise<number>((resolve) => ws.once('unexpected-response', (_req, res) => resolve(res.statusCode!)));
      assert.equal(code, 404);
    });
  });
});
