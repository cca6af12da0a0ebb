/** The session a browser's websocket carries as subprotocols (it cannot set the legacyidauth header). */
import assert from 'node:assert/strict';
import { authFromProtocols } from '../../core/http/ws.ts';

describe('core: websocket session from subprotocols', () => {
  const header = 'legacyid=1abc&signature=H%2Bx%2F%3D&loginPhrase=17000000000001abc';
  const enc = Buffer.from(header).toString('base64url');
  it('legacyidauth then the header base64url-encoded gives the header', () => {
    assert.equal(authFromProtocols(`legacyidauth, ${enc}`), header);
    assert.equal(authFromProtocols(`legacyidauth,${enc}`), header);
  });
  it('anything else gives no session', () => {
    for (const v of [undefined, '', 'legacyidauth', `other, ${enc}`, `${enc}, legacyidauth`, 'legacyidauth, a=b'] as const) assert.equal(authFromProtocols(v), undefined, String(v));
  });
});
