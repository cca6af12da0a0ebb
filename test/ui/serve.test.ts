/**
 * How the ui plugin serves the web interface: the index (no-store, the Content-Security-Policy allowing
 * only this node), the hashed assets (a year's cache, gzip when asked, 404 for unknown names), the UI port
 * (API port − 1 with `ui.port: true`) whose page calls the API port, and a disabled plugin.
 */
import assert from 'node:assert/strict';
import { launchBrowser } from '../support/browser.ts';
import { startNode, type TestNode } from '../support/node.ts';
import { freePortIn } from '../support/ports.ts';

const assetsOf = (html: string) => [...html.matchAll(/\/ui\/assets\/([A-Za-z0-9_.-]+)/g)].map((m) => m[1]);

describe('ui: serving the web interface', function () {
  this.timeout(60_000);
  let node: TestNode;
  let uiPort: number;

  before(async () => {
    // The API port and the one below it, both free.
    let port = 0;
    for (;;) {
      port = await freePortIn(32001, 32499);
      if (port - 1 !== (await freePortIn(port - 1, port - 1).catch(() => 0))) continue;
      break;
    }
    uiPort = port - 1;
    node = await startNode({ plugins: ['identity', 'ui'], port, config: { ui: { port: true } } });
  });
  after(() => node?.close());

  it('GET / answers the page with a policy that allows only this node, never cached; a query is accepted', async () => {
    const r = await node.get('/');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type')!, /^text\/html/);
    assert.equal(r.headers.get('cache-control'), 'no-store');
    const host = new URL(node.url).host;
    assert.equal(
      r.headers.get('content-security-policy'),
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self' ws://${host} wss://${host}; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
    );
    assert.equal(r.headers.get('x-frame-options'), 'DENY');
    assert.doesNotMatch(r.text, /https?:\/\//, 'the page names no other site');
    assert.equal((await node.get('/?ref=wallet')).status, 200);
  });

  it('assets: content-hashed names cached for a year, gzip when the client takes it, unknown names 404', async () => {
    const names = assetsOf((await node.get('/')).text);
    assert.ok(names.some((n) => /^app-[A-Z0-9]+\.js$/.test(n)) && names.some((n) => /^app-[A-Z0-9]+\.css$/.test(n)), names.join());
    for (const name of names) {
      const plain = await fetch(`${node.url}/ui/assets/${name}`, { headers: { 'accept-encoding': 'identity' } });
      assert.equal(plain.status, 200, name);
      assert.equal(plain.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(plain.headers.get('content-encoding'), null);
      const body = Buffer.from(await plain.arrayBuffer());
      const gz = await fetch(`${node.url}/ui/assets/${name}`, { headers: { 'accept-encoding': 'gzip' } });
      assert.equal(gz.headers.get('content-encoding'), 'gzip');
      assert.deepEqual(Buffer.from(await gz.arrayBuffer()), body, 'fetch inflates it to the same bytes');
    }
    assert.equal((await node.get('/ui/assets/app-NOPE.js')).status, 404);
    const bad = await node.get('/ui/assets/..%2F..%2Fpackage.json');
    assert.notEqual(bad.status, 200);
    assert.doesNotMatch(bad.text, /corenode/);
  });

  it('ui.port: the same page on the API port − 1, calling the API port (trusted by the default CORS origins)', async () => {
    const r = await fetch(`http://127.0.0.1:${uiPort}/`);
    assert.equal(r.status, 200);
    const html = await r.text();
    assert.match(html, new RegExp(`<meta name="corenode-api" content="http:${uiPort + 1}">`));
    const apiPort = uiPort + 1;
    assert.match(r.headers.get('content-security-policy')!, new RegExp(`connect-src 'self' ws://127\\.0\\.0\\.1:${uiPort} wss://127\\.0\\.0\\.1:${uiPort} http://127\\.0\\.0\\.1:${apiPort} ws://127\\.0\\.0\\.1:${apiPort}`));
    for (const name of assetsOf(html)) assert.equal((await fetch(`http://127.0.0.1:${uiPort}/ui/assets/${name}`)).status, 200, name);
    assert.equal((await fetch(`http://127.0.0.1:${uiPort}/core/version`)).status, 404, 'only the page is served there');

    const browser = await launchBrowser();
    try {
      const { page, errors } = await browser.page();
      await page.goto(`http://127.0.0.1:${uiPort}/#/node`);
      await page.locator('[data-field="version"]').getByText((await node.get('/core/version')).json.data).waitFor();
      assert.deepEqual(errors.filter((e) => !e.includes('status of 404')), []);
    } finally {
      await browser.close();
    }
  });

  it('disabled like any plugin: / answers 503 saying so, the rest of the node serves on', async () => {
    const off = await startNode({ plugins: ['ui'], config: { plugins: { ui: false } } });
    try {
      const r = await off.get('/');
      // A route outside the envelope answers the refusal with its wire status.
      assert.equal(r.status, 503);
      assert.match(r.json.message, /The ui plugin is disabled on this node/);
      assert.equal((await off.get('/core/version')).json.status, 'success');
    } finally {
      await off.close();
    }
  });
});
