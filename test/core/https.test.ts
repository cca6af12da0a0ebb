/**
 * HTTPS when api.tls is set: the same routes over TLS, and HTTPS-only routes pass. With api.tls.port, HTTP
 * and HTTPS at once (test/core/https-both.test.ts).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import { tempDir, type TestNode } from '../support/node.ts';
import { startFixtureNode } from '../support/fixture.ts';
import { hasOpenssl, selfSigned } from '../support/certs.ts';

function get(port: number, p: string, ca: Buffer): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port, path: p, ca }, (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
      })
      .on('error', reject);
  });
}

describe('HTTPS', function () {
  let dir: string;
  let node: TestNode;
  let port: number;
  let ca: Buffer;
  before(async function () {
    if (!hasOpenssl()) return this.skip(); // no way to make a certificate here; the plain-HTTP tests still run
    dir = tempDir('corenode-tls-');
    const tls = selfSigned(dir);
    ca = fs.readFileSync(tls.cert);
    node = await startFixtureNode({ config: { api: { port: 0, host: '127.0.0.1', tls } } });
    // startNode listened once with the config; its server is the HTTPS one.
    port = (node.host.server!.address() as import('node:net').AddressInfo).port;
  });
  after(async () => {
    await node?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('serves the envelope over TLS', async () => {
    const res = await get(port, '/fixture/echo/x', ca);
    assert.equal(res.status, 200);
    assert.equal(res.json.data.params.a, 'x');
  });

  it('lets HTTPS-only routes pass', async () => {
    const res = await get(port, '/fixture/secure', ca);
    assert.equal(res.status, 200);
    assert.equal(res.json.status, 'success');
  });

  it('refuses plain HTTP on the TLS port (no answer in clear text)', async () => {
    await assert.rejects(fetch(`http://127.0.0.1:${port}/fixture/echo`));
  });
});
