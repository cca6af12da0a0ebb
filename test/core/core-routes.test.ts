/** The first plugin, `core`: every route answers the envelope with the data the spec describes. */
import assert from 'node:assert/strict';
import { VERSION } from '../../core/version.ts';
import type { TestNode } from '../support/node.ts';
import { OPERATOR, startCoreNode } from '../support/fixture.ts';

describe('core plugin routes', () => {
  let node: TestNode;
  before(async () => {
    node = await startCoreNode({ config: { initial: { legacyid: OPERATOR }, node: { routerIp: '10.0.0.1', hardenedOs: false } } });
  });
  after(() => node.close());

  it('answers every GET route of node.yaml in the envelope at HTTP 200', async () => {
    const routes = node.host.routes.filter((r) => r.spec.plugin === 'node' && r.spec.method === 'GET');
    assert.ok(routes.length >= 11);
    for (const r of routes) {
      // Paths with parameters and HTTPS-only routes (403 here) have their own tests (test/node).
      if (r.spec.httpsOnly) continue;
      for (const p of [r.spec.path, ...r.spec.aliases].filter((x) => !x.includes(':'))) {
        const res = await node.get(p);
        assert.equal(res.status, 200, p);
        assert.match(res.headers.get('content-type') ?? '', /application\/json/);
        // Routes that need a daemon, a provider or a file absent here answer a typed error, never a crash.
        assert.ok(res.json.status === 'success' || (res.json.status === 'error' && res.json.data.name !== 'InternalError'), `${p}: ${res.text}`);
        assert.ok('data' in res.json, p);
      }
    }
  });

  it('reports the data each route names', async () => {
    const data = async (p: string) => (await node.get(p)).json.data;
    assert.equal(await data('/core/version'), VERSION);
    assert.equal(await data('/core/timezone'), Intl.DateTimeFormat().resolvedOptions().timeZone);
    assert.ok(Number.isInteger(await data('/core/uptime')));
    const sys = await data('/core/systemuptime');
    assert.ok(Number.isInteger(sys) && sys > 1000, 'system uptime is in milliseconds');
    assert.equal((await data('/core/nodejsversions')).node, process.versions.node);
    assert.equal(await data('/core/apiport'), '0');
    assert.equal(await data('/core/routerip'), '10.0.0.1');
    assert.equal(await data('/core/ishardenedos'), false);
    assert.equal(await data('/core/id'), OPERATOR);
    assert.equal(await data('/core/legacyid'), OPERATOR, 'alias of /core/id');
    assert.deepEqual(Object.keys(await data('/core/coreids')).sort(), ['coreSupportTeamCoreID', 'coreTeamCoreID']);
  });

  it('lists each fitness check with its state on /core/health', async () => {
    const h = (await node.get('/core/health')).json.data;
    assert.equal(h.healthy, true);
    const db = h.checks.find((c: any) => c.name === 'database');
    assert.equal(db.ok, true);
    assert.equal(db.required, true);

    const drop = node.host.health.register('test-disk', () => ({ ok: false, message: 'disk full', detail: { at: 'http://127.0.0.1:16224/' } }));
    const optional = node.host.health.register('test-optional', () => false, { required: false });
    // Anyone gets the verdicts; messages and details (internal endpoints) are the operator's.
    // Test double of the identity plugin's resolver: it trusts the header (no identity plugin on this node).
    const dropResolver = node.host.auth.useSessionResolver((h) => ({ legacyid: h.legacyid, loginPhrase: h.loginPhrase }));
    const asOperator = { legacyidauth: new URLSearchParams({ legacyid: OPERATOR, signature: 'x', loginPhrase: 'p'.repeat(40) }).toString() };
    try {
      const pub = (await node.get('/core/health')).json.data;
      assert.equal(pub.healthy, false);
      assert.deepEqual(pub.checks.find((c: any) => c.name === 'test-disk'), { name: 'test-disk', ok: false, required: true });
      assert.doesNotMatch(JSON.stringify(pub), /disk full|16224|durationMs/);
      const h2 = (await node.get('/core/health', asOperator)).json.data;
      assert.deepEqual(h2.checks.find((c: any) => c.name === 'test-disk').detail, { at: 'http://127.0.0.1:16224/' });
      assert.equal(h2.healthy, false);
      assert.deepEqual(
        h2.checks.find((c: any) => c.name === 'test-disk'),
        { ...h2.checks.find((c: any) => c.name === 'test-disk'), ok: false, message: 'disk full', required: true },
      );
      assert.equal(h2.checks.find((c: any) => c.name === 'test-optional').ok, false);
    } finally {
      dropResolver();
      drop();
      optional();
    }
    const h3 = (await node.get('/core/health')).json.data;
    assert.equal(h3.healthy, true);
  });

  it('refuses a query string on its routes with HTTP 400 in the envelope', async () => {
    const res = await node.get('/core/version?x=1');
    assert.equal(res.status, 400);
    assert.equal(res.json.status, 'error');
    assert.equal(res.json.data.code, 400);
  });

  it('answers 404 on /core/eventstream while the stream is not enabled', async () => {
    const res = await node.get('/core/eventstream');
    assert.equal(res.status, 404, res.text);
    assert.equal(res.json.status, 'error');
  });
});

describe('core event stream (enabled)', () => {
  let node: TestNode;
  before(async () => {
    node = await startCoreNode({ config: { node: { eventStream: true } } });
  });
  after(() => node.close());

  it('streams events with ids and replays from Last-Event-ID', async () => {
    node.host.events.emit('test:one', { n: 1 });
    const first = node.host.events.emit('test:two', { n: 2 });
    const ac = new AbortController();
    const res = await fetch(`${node.url}/core/eventstream`, { signal: ac.signal, headers: { 'last-event-id': String(first.id - 1) } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(res.headers.get('x-accel-buffering'), 'no');
    const reader = res.body!.getReader();
    let text = '';
    node.host.events.emit('test:three', { n: 3 });
    while (!text.includes('test:three')) text += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    assert.ok(!text.includes('test:one'), 'only events after Last-Event-ID are replayed');
    assert.match(text, new RegExp(`event: test:two\\nid: ${first.id}\\ndata: \\{"n":2\\}`));
    assert.match(text, /event: test:three/);
  });
});
