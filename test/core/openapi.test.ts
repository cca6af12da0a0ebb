/** GET /openapi.json: an OpenAPI 3.1 document generated from the live manifests, valid against the official schema. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { assertValidOpenApi as assertValid } from '../support/openapi.ts';
import { VERSION } from '../../core/version.ts';
import type { TestNode } from '../support/node.ts';
import { startCoreNode, startFixtureNode } from '../support/fixture.ts';

describe('OpenAPI document', () => {
  let node: TestNode & { manifests: string };
  before(async () => {
    node = await startFixtureNode();
  });
  after(() => node.close());

  it('is valid OpenAPI 3.1 and describes every route, alias and level', async () => {
    const res = await node.get('/openapi.json');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const doc = res.json;
    await assertValid(doc);
    assert.equal(doc.info.version, VERSION);
    const echo = doc.paths['/fixture/echo/{a}/{b}'].get;
    assert.equal(echo.operationId, 'fixture.echo');
    assert.equal(echo['x-level'], 'public');
    assert.ok(doc.paths['/fixture/echo'].get, 'optional segments give one path per prefix');
    assert.equal(doc.paths['/fx/echo/{a}/{b}'].get.deprecated, true, 'alias prefixes are deprecated names');
    assert.equal(doc.paths['/fixture/level/admin'].get['x-level'], 'admin');
    assert.deepEqual(doc.paths['/fixture/level/admin'].get.security, [{ legacyidauth: [] }]);
    assert.equal(echo.security, undefined, 'public routes need no header');
    assert.equal(doc.paths['/fixture/old'].get['x-removed'], '8.19.0');
    assert.ok(doc.paths['/fixture/noquery'].get.responses['400'], 'a route refusing queries declares 400');
    assert.ok(doc.paths['/fixture/rawjson'].post.responses['413']);
    assert.ok(doc.paths['/fixture/secure'].get.responses['403']);
    assert.ok(doc.paths['/fixture/gated'].get.responses['503']);
    assert.ok(doc.paths['/fixture/job'].post.responses['202']);
    assert.deepEqual(doc.paths['/fixture/typed/{n}'].get.parameters, [
      { name: 'n', in: 'path', required: true, schema: { type: 'integer', minimum: 1 } },
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', maximum: 10 } },
    ]);
    assert.ok(doc.paths['/fixture/stream'].get.responses['200'].content['text/event-stream']);
  });

  it('follows reloads: a route added to a manifest appears in the document', async () => {
    const file = path.join(node.manifests, 'fixture.yaml');
    const original = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, original.replace('routes:\n', 'routes:\n  - { id: fixture.added, path: /added/:x, handler: echo }\n'));
    try {
      assert.equal((await node.host.reload()).ok, true);
      const doc = (await node.get('/openapi.json')).json;
      assert.equal(doc.paths['/fixture/added/{x}'].get.operationId, 'fixture.added');
      await assertValid(doc);
    } finally {
      fs.writeFileSync(file, original);
      await node.host.reload();
    }
  });

  it('is valid for the core plugin and host routes', async () => {
    const core = await startCoreNode();
    try {
      await assertValid((await core.get('/openapi.json')).json);
    } finally {
      await core.close();
    }
  });
});
