/**
 * Issue 11: `HEAD` ran GET handlers, so `HEAD /id/logoutcurrentsession` logged out and `HEAD /id/loginphrase`
 * issued a phrase. No state changes on HEAD. The fix is the host's (for every route), not the plugin's: these
 * tests fail on a host that still runs GET handlers for HEAD, and pass once it does not.
 */
import assert from 'node:assert/strict';
import type { TestNode } from '../support/node.ts';
import { bitcoinWallet } from '../support/wallets.ts';
import { startIdentityNode } from './node.ts';
import { login } from '../support/wallets.ts';

const admin = bitcoinWallet();

describe('identity: HEAD changes nothing (needs the host\'s HEAD fix)', () => {
  let node: TestNode;
  before(async () => {
    node = await startIdentityNode({ config: { initial: { legacyid: admin.legacyid } } });
  });
  after(() => node.close());

  const works = async (header: string) => (await node.get('/id/loggedsessions', { legacyidauth: header })).json.status === 'success';

  it('HEAD /id/logoutcurrentsession, /id/logoutallsessions and /id/logoutallusers log nobody out', async () => {
    const op = await login(node, admin);
    const user = await login(node, bitcoinWallet());
    for (const p of ['/id/logoutcurrentsession', '/legacyid/logoutcurrentsession', '/id/logoutallsessions']) {
      const r = await node.request('HEAD', p, { headers: { legacyidauth: user.header } });
      assert.equal(r.text, '', `${p}: a HEAD answer has no body`);
      assert.equal(await works(user.header), true, `HEAD ${p} logged the user out`);
    }
    await node.request('HEAD', '/id/logoutallusers', { headers: { legacyidauth: op.header } });
    assert.equal(await works(op.header), true, 'HEAD /id/logoutallusers logged the operator out');
    assert.equal(await works(user.header), true, 'HEAD /id/logoutallusers logged the user out');
  });

  it('HEAD /id/loginphrase and /id/emergencyphrase issue no phrase', async () => {
    const op = await login(node, admin);
    const count = async () => (await node.get('/id/activeloginphrases', { legacyidauth: op.header })).json.data.length;
    const before = await count();
    for (let i = 0; i < 3; i++) {
      await node.request('HEAD', '/id/loginphrase');
      await node.request('HEAD', '/id/emergencyphrase');
    }
    assert.equal(await count(), before);
  });
});
