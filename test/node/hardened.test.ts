/**
 * The hardened-OS routes: 403 over plain HTTP; over HTTPS (a certificate openssl makes here) the node asks
 * the config daemon (a TEST-ONLY double on loopback) for a challenge and hands it the signed config; 501
 * on a node without the hardened OS, 502 when the config daemon is away, 413 over 16 KB.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startOpsNode, tmp } from './support.ts';

function selfSigned(dir: string): { cert: string; key: string } {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  return { cert, key };
}

function call(port: number, ca: Buffer, method: string, p: string, body?: string): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port, path: p, method, ca, headers: body ? { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) } : {} }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** TEST-ONLY config daemon double: a challenge per caller IP, and config updates signed "valid". */
async function configDaemonDouble() {
  const seen: any[] = [];
  const server = http.createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const body = JSON.parse(text);
    seen.push({ path: req.url, body });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/challenge') return res.end(JSON.stringify({ challenge: `challenge-for-${body.ip}` }));
    if (req.url === '/configupdate') {
      if (body.signature !== 'valid') return (res.statusCode = 401), res.end(JSON.stringify({ message: 'bad signature' }));
      return res.end(JSON.stringify({ ok: true }));
    }
    res.statusCode = 404;
    res.end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, seen, close: () => new Promise((r) => server.close(r)) };
}

describe('hardened-OS routes', function () {
  this.timeout(60_000);
  let dir: string;
  let ca: Buffer;
  let tls: { cert: string; key: string };
  let daemon: Awaited<ReturnType<typeof configDaemonDouble>>;
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  let port: number;
  const sync = (body: unknown) => call(port, ca, 'POST', '/hardened/configsync', JSON.stringify(body));

  before(async () => {
    dir = tmp('tls');
    tls = selfSigned(dir);
    ca = fs.readFileSync(tls.cert);
    daemon = await configDaemonDouble();
    node = await startOpsNode({ config: { api: { port: 0, host: '127.0.0.1', tls } }, node: { hardenedOs: true, hardened: { configDaemonUrl: daemon.url, timeoutMs: 2000 } } });
    port = (node.host.server!.address() as AddressInfo).port;
  });
  after(async () => {
    await node?.close();
    await daemon?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers 403 over plain HTTP', async () => {
    const plain = await startOpsNode({ node: { hardenedOs: true } });
    try {
      assert.equal((await plain.get('/hardened/authchallenge')).status, 403);
      assert.equal((await plain.post('/hardened/configsync', {})).status, 403);
    } finally {
      await plain.close();
    }
  });

  it('relays a challenge for the caller and a signed config update over HTTPS', async () => {
    const c = await call(port, ca, 'GET', '/hardened/authchallenge');
    assert.deepEqual(c.json, { status: 'success', data: { challenge: 'challenge-for-127.0.0.1' } });
    const ok = await sync({ challenge: 'challenge-for-127.0.0.1', encryptedChallenge: 'enc', signature: 'valid', configData: { hostname: 'node-1' } });
    assert.deepEqual(ok.json, { status: 'success', data: { message: 'Configuration synchronised' } });
    assert.deepEqual(daemon.seen.at(-1).body, { ip: '127.0.0.1', challenge: 'challenge-for-127.0.0.1', encryptedChallenge: 'enc', signature: 'valid', configData: { hostname: 'node-1' } });
  });

  it('says why a sync is refused: bad signature, bad fields, too large', async () => {
    const bad = await sync({ challenge: 'c', encryptedChallenge: 'e', signature: 'forged', configData: {} });
    assert.deepEqual([bad.json.data.code, bad.json.data.name], [401, 'Unauthorized']);
    assert.match((await sync({ challenge: 'c', signature: 'valid', configData: {} })).json.data.message, /encryptedChallenge must be a non-empty string/);
    assert.match((await sync({ challenge: 'c', encryptedChallenge: 'e', signature: 'valid', configData: [1] })).json.data.message, /configData must be an object/);
    assert.equal((await sync({ challenge: 'c', encryptedChallenge: 'e', signature: 'valid', configData: { x: 'y'.repeat(17 * 1024) } })).status, 413);
  });

  it('answers 501 on a node without the hardened OS and 502 when the config daemon is away', async () => {
    const normal = await startOpsNode({ config: { api: { port: 0, host: '127.0.0.1', tls } } });
    const away = await startOpsNode({ config: { api: { port: 0, host: '127.0.0.1', tls } }, node: { hardenedOs: true, hardened: { configDaemonUrl: 'http://127.0.0.1:1/', timeoutMs: 1000 } } });
    try {
      const n = await call((normal.host.server!.address() as AddressInfo).port, ca, 'GET', '/hardened/authchallenge');
      assert.deepEqual([n.status, n.json.data.code, n.json.data.name], [200, 501, 'NotImplemented']);
      const a = await call((away.host.server!.address() as AddressInfo).port, ca, 'GET', '/hardened/authchallenge');
      assert.deepEqual([a.json.data.code, a.json.data.name], [502, 'BadGateway']);
    } finally {
      await normal.close();
      await away.close();
    }
  });
});
