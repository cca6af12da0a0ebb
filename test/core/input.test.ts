/**
 * The manifest's input language: one JSON Schema over the merged path, body and query (`input`,
 * `inputFrom`), converted and validated by the host; route schemas in ajv strict mode with the unknown
 * keyword's file:line:column; a plugin's `x` blocks checked against its `routeData`.
 */
import assert from 'node:assert/strict';
import { ManifestError, parseManifest } from '../../core/manifest/parse.ts';
import { checkRouteData } from '../../core/manifest/route-data.ts';
import { bindRoute } from '../../core/http/chain.ts';
import { validationRefusal } from '../support/refusal.ts';

const HEAD = 'format: 1\nplugin: demo\nversion: 1.0.0\ndefaults: { level: public }\nroutes:\n';

function route(yaml: string) {
  const m = parseManifest(HEAD + yaml, 'demo.yaml');
  return { m, bound: bindRoute(m.routes[0], undefined) };
}

const refusal = validationRefusal;

describe('manifest input (merged path, body and query)', () => {
  const { bound } = route(
    [
      '  - id: demo.get',
      '    method: POST',
      '    path: /get/:hash?/:n?',
      '    handler: h',
      '    body: { parser: raw-json }',
      '    input:',
      '      required: [hash]',
      '      properties:',
      "        hash: { type: string, maxLength: 64, pattern: '^[0-9a-f]+$' }",
      '        n: { type: integer, minimum: 0, maximum: 9, default: 2 }',
      '        on: { type: boolean }',
      '        ids: { type: array, coerce: list, maxItems: 3, items: { type: string, minLength: 1 } }',
      '        obj: { type: object, coerce: json }',
      '        flag: { type: integer, coerce: flag, enum: [0, 1] }',
      "        limit: { type: integer, minimum: 1, errorMessage: 'must be a whole number from 1' }",
      '',
    ].join('\n'),
  );
  const run = (path: Record<string, unknown>, query: Record<string, unknown> = {}, body?: unknown) => bound.validateInput!({ path, query, body });

  it('merges in the inputFrom order; empty values count as not given; defaults fill in', () => {
    assert.deepEqual({ ...run({ hash: 'ab' }, { hash: 'cd', n: '3' }, { hash: 'ef' }) }, { hash: 'ab', n: 3 });
    assert.deepEqual({ ...run({ hash: '' }, { hash: 'cd' }, { hash: null }) }, { hash: 'cd', n: 2 });
    assert.deepEqual({ ...run({}, {}, { hash: 'ef', n: 4 }) }, { hash: 'ef', n: 4 });
  });

  it('converts strings with exact forms; drops undeclared keys', () => {
    const v = run({ hash: 'ab' }, { on: '1', ids: 'a, b', obj: '{"k":1}', flag: 'true', other: 'x' });
    assert.deepEqual({ ...v }, { hash: 'ab', n: 2, on: true, ids: ['a', 'b'], obj: { k: 1 }, flag: 1 });
    assert.deepEqual(run({ hash: 'ab' }, { ids: '["x","y"]' }).ids, ['x', 'y']);
    assert.equal(Object.getPrototypeOf(run({ hash: 'ab' }, {}, JSON.parse('{"__proto__": {"polluted": 1}}'))), null);
  });

  it('additionalProperties: false refuses an undeclared key (named with its source) instead of dropping it', () => {
    const closed = route(['  - id: demo.c', '    path: /c/:app', '    handler: h', '    inputFrom: [path, query]', '    input:', '      additionalProperties: false', '      properties: { app: { type: string }, limit: { type: integer } }', ''].join('\n')).bound;
    const run2 = (path: Record<string, unknown>, query: Record<string, unknown>) => closed.validateInput!({ path, query, body: undefined });
    assert.deepEqual({ ...run2({ app: 'a' }, { limit: '5' }) }, { app: 'a', limit: 5 });
    assert.equal(refusal(() => run2({ app: 'a' }, { 'limit[$gt]': '0' })), 'Invalid query input: limit[$gt] is not a known key');
    assert.equal(refusal(() => run2({ app: 'a' }, { other: '1' })), 'Invalid query input: other is not a known key');
  });

  it('refuses with the source and the property in the node API words', () => {
    assert.equal(refusal(() => run({})), 'Invalid input: hash is required');
    assert.equal(refusal(() => run({ hash: 'ab', n: '1e3' })), 'Invalid path input: n must be an integer');
    assert.equal(refusal(() => run({ hash: 'ab' }, { n: '99999999999999999999' })), 'Invalid query input: n must be an integer');
    assert.equal(refusal(() => run({ hash: 'ab' }, {}, { n: 1e20 })), 'Invalid body input: n must be an integer');
    assert.equal(refusal(() => run({ hash: 'ab', n: '10' })), 'Invalid path input: n must be at most 9');
    assert.equal(refusal(() => run({ hash: 'zz' })), 'Invalid path input: hash is not in the expected form');
    assert.equal(refusal(() => run({ hash: 'a'.repeat(65) })), 'Invalid path input: hash is longer than 64 characters');
    assert.equal(refusal(() => run({}, {}, { hash: 12 })), 'Invalid body input: hash must be a string');
    assert.equal(refusal(() => run({ hash: 'ab' }, { on: 'maybe' })), 'Invalid query input: on must be true, false, 1 or 0');
    assert.match(refusal(() => run({ hash: 'ab' }, { ids: 'a,,b' })), /ids must be a list of strings/);
    assert.equal(refusal(() => run({ hash: 'ab' }, { ids: 'a,b,c,d' })), 'Invalid query input: ids has more than 3 items');
    assert.equal(refusal(() => run({ hash: 'ab' }, { obj: '{' })), 'Invalid query input: obj is not valid JSON');
    assert.equal(refusal(() => run({ hash: 'ab' }, { obj: '[1]' })), 'Invalid query input: obj must be a JSON object');
    assert.equal(refusal(() => run({ hash: 'ab' }, { flag: 'yes' })), 'Invalid query input: flag must be true, false, 1 or 0');
    assert.equal(refusal(() => run({ hash: 'ab' }, { limit: '0' })), 'Invalid query input: limit must be a whole number from 1');
    assert.equal(refusal(() => run({ hash: 'ab' }, {}, [1])), 'The request body must be a JSON object of named parameters');
  });

  it('a route with input takes the query string even where defaults refuse one', () => {
    const m = parseManifest(HEAD.replace('{ level: public }', '{ level: public, query: false, inputFrom: [path, query] }') + "  - { id: demo.a, path: /a, handler: h, input: { properties: { q: { type: string, maxLength: 9 } } } }\n", 'demo.yaml');
    assert.equal(m.routes[0].query, true);
    assert.deepEqual(m.routes[0].input!.from, ['path', 'query']);
  });
});

describe('route schemas are strict: an unknown keyword is a manifest error at its line and column', () => {
  it('in input, params, query and body schemas, and shared schemas', () => {
    const cases: [string, RegExp][] = [
      ["  - id: demo.a\n    path: /a\n    handler: h\n    input:\n      properties:\n        x: { type: string, maxLenght: 3 }\n", /^demo\.yaml:11:28: maxLenght is not a JSON Schema keyword \(routes\.0\.input\)$/],
      ['  - id: demo.a\n    path: /a/:x\n    handler: h\n    params: { type: object, propertes: {} }\n', /^demo\.yaml:9:29: propertes is not a JSON Schema keyword/],
      ['  - id: demo.a\n    path: /a\n    handler: h\n    query: { type: object, additionalProperties: { tpye: string } }\n', /^demo\.yaml:9:52: tpye is not a JSON Schema keyword/],
    ];
    for (const [yaml, pattern] of cases) assert.throws(() => parseManifest(HEAD + yaml, 'demo.yaml'), (e: Error) => e instanceof ManifestError && pattern.test(e.message));
    assert.throws(
      () => parseManifest(HEAD.replace('routes:\n', 'schemas:\n  s: { type: string, minimun: 1 }\nroutes:\n') + '  - { id: demo.a, path: /a, handler: h }\n', 'demo.yaml'),
      (e: Error) => e instanceof ManifestError && e.message === 'demo.yaml:6:22: minimun is not a JSON Schema keyword (schemas.s)',
    );
  });

  it('input replaces params, query and body.schema on a route', () => {
    assert.throws(() => parseManifest(HEAD + '  - { id: demo.a, path: /a/:x, handler: h, params: { type: object }, input: { properties: {} } }\n', 'demo.yaml'), /input declares the whole input/);
  });
});

describe("a plugin's route data (x blocks against routeData)", () => {
  const def = { id: 'demo', routeData: { type: 'object', additionalProperties: false, properties: { rpc: { type: 'string' }, params: { type: 'array', items: { type: 'string' } } } } };

  it('accepts fitting blocks and names a misspelled key at its line and column', () => {
    const good = parseManifest(HEAD + '  - { id: demo.a, path: /a, handler: h, x: { rpc: a, params: [b] } }\n  - { id: demo.b, path: /b, handler: h }\n', 'demo.yaml');
    assert.deepEqual(checkRouteData(good, def), []);
    const bad = parseManifest(HEAD + '  - id: demo.a\n    path: /a\n    handler: h\n    x:\n      rpc: a\n      parms: [b]\n', 'demo.yaml');
    assert.deepEqual(checkRouteData(bad, def), ['demo.yaml:11:7: x.parms: is not a known key']);
    const wrongType = parseManifest(HEAD + '  - { id: demo.a, path: /a, handler: h, x: { params: [1] } }\n', 'demo.yaml');
    assert.deepEqual(checkRouteData(wrongType, def), ['demo.yaml:6:55: x.params[0]: must be string']);
  });

  it('a plugin without routeData takes no x block', () => {
    const m = parseManifest(HEAD + '  - { id: demo.a, path: /a, handler: h, x: { color: blue } }\n', 'demo.yaml');
    assert.deepEqual(checkRouteData(m, { id: 'demo' }), ['demo.yaml:6:46: x.color: is not a known key']);
  });
});
