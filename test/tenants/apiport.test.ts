/**
 * `/core/adjustapiport` stores the API port the node takes up at its next start: called by anyone, it moves
 * the node off the port the network expects (a remote denial of service). Only the operator (Admin) may;
 * everyone else is refused and the stored port on disk stays as it was.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDocker, type TestDocker } from '../support/docker.ts';
import { said, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

const OVERLAY = 'operator-overlay.json';

describe('tenants: the API port is the operator’s to change', function () {
  this.timeout(240_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let node: TenantNode;
  const overlay = () => (fs.existsSync(path.join(node.dataDir, OVERLAY)) ? fs.readFileSync(path.join(node.dataDir, OVERLAY), 'utf8') : null);

  before(async () => {
    docker = await ensureDocker();
    node = await startTenantNode({ docker, wallets: w });
  });
  after(async () => {
    await node?.stop();
  });

  it('refuses an anonymous caller, a paying owner, a stranger and the core team, the stored port unchanged on disk', async () => {
    const before = overlay();
    const callers: [string, Record<string, string> | undefined][] = [
      ['anonymous', undefined],
      ['B', node.headers.b],
      ['stranger', node.headers.stranger],
      ['core team', node.headers.coreTeam],
    ];
    for (const [who, headers] of callers) {
      for (const url of ['/core/adjustapiport/16137', '/core/adjustapiport?apiport=16147']) {
        const a = await node.get(url, headers);
        assert.equal(a.status, 200, `${who} ${url}: ${said(a)}`);
        assert.deepEqual([a.json?.status, a.json?.data?.code, a.json?.data?.name], ['error', 401, 'Unauthorized'], `${who} ${url}: ${said(a)}`);
      }
    }
    assert.equal(overlay(), before, 'the stored overlay is as it was');
    assert.doesNotMatch(overlay() ?? '', /api\.port/);
  });

  it('stores the operator’s port, which the others still cannot change', async () => {
    const a = await node.get('/core/adjustapiport/16137', node.headers.admin);
    assert.deepEqual(a.json?.data, { message: 'API Port adjusted. A restart of CoreOS is necessary' }, said(a));
    assert.equal(JSON.parse(overlay()!)['api.port'], 16137);
    const stored = overlay();
    assert.equal((await node.get('/core/adjustapiport/16147')).json?.data?.code, 401);
    assert.equal(overlay(), stored);
  });
});
