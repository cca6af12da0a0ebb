/** Route lookup: the rules @koa/router had (case, trailing slash, decoding) and the precedence it documents. */
import assert from 'node:assert/strict';
import { RouteMatcher } from '../../core/http/router.ts';

describe('route matcher', () => {
  const m = new RouteMatcher<string>();
  m.add('GET', '/core/version', 'version');
  m.add('GET', '/daemon/getblock/:hash/:verbosity?', 'getblock');
  m.add('GET', '/daemon/:method', 'generic');
  m.add('GET', '/daemon/getinfo', 'getinfo');
  m.add('GET', '/:anything', 'root');
  m.add('POST', '/core/version', 'post-version');
  m.add('WS', '/ws/id/:phrase', 'socket');

  const find = (method: string, p: string) => {
    const f = m.find(method, p);
    return f && { v: f.value, params: { ...f.params } };
  };

  it('finds static paths case-insensitively, with or without a trailing slash, per method', () => {
    assert.deepEqual(find('GET', '/core/version'), { v: 'version', params: {} });
    assert.deepEqual(find('GET', '/CORE/Version/'), { v: 'version', params: {} });
    assert.equal(find('POST', '/core/version')?.v, 'post-version');
    assert.equal(find('DELETE', '/core/version'), undefined);
  });

  it('matches parameters (optional ones too) and keeps their case', () => {
    assert.deepEqual(find('GET', '/daemon/getblock/AbC'), { v: 'getblock', params: { hash: 'AbC' } });
    assert.deepEqual(find('GET', '/daemon/getblock/AbC/2/'), { v: 'getblock', params: { hash: 'AbC', verbosity: '2' } });
    assert.deepEqual(find('WS', '/ws/id/p%20q'), { v: 'socket', params: { phrase: 'p q' } });
  });

  it('decodes parameters, leaving malformed encodings as sent', () => {
    assert.deepEqual(find('GET', '/daemon/getblock/a%2Fb')?.params, { hash: 'a/b' });
    assert.deepEqual(find('GET', '/daemon/getblock/%E0%A4%A')?.params, { hash: '%E0%A4%A' });
  });

  it('prefers an exact static path, then the longer static prefix', () => {
    assert.equal(find('GET', '/daemon/getinfo')?.v, 'getinfo');
    assert.equal(find('GET', '/daemon/getblock')?.v, 'generic', '/daemon/getblock/:hash needs its hash');
    assert.equal(find('GET', '/daemon/other')?.v, 'generic');
    assert.equal(find('GET', '/x')?.v, 'root');
  });

  it('does not match across segments or extra segments', () => {
    assert.equal(find('GET', '/daemon/getblock/a/b/c'), undefined);
    assert.equal(find('GET', '/core/version/x'), undefined);
    assert.equal(find('GET', '/'), undefined);
  });
});
