/**
 * Placement (issue 14): `POST /apps/placementfeasibility` answers a list of checks with verdicts for a
 * prospective specification (resources against the node's tier, ports, repository policy, geolocation,
 * target nodes, static IP, enterprise), and `GET /apps/placementlocations` the geography this node knows.
 * No Docker is needed (nothing is installed): the node points at a socket that does not exist.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import type { TestDocker } from '../support/docker.ts';
import { data, error, freeAppPort2, makeWallets, startAppsNode, until, v3Spec, v8Spec, component, writePolicy, type AppsNode } from './support.ts';

describe('apps: placement feasibility and locations', function () {
  this.timeout(60_000);
  let node: AppsNode;
  const dir = fs.mkdtempSync('/tmp/apps2-placement-');
  const w = makeWallets();
  const noDocker = { socketPath: `${dir}/no-docker.sock` } as TestDocker;
  const IMG = '127.0.0.1:5000/corenode-test/node:1';

  before(async () => {
    node = await startAppsNode({
      docker: noDocker,
      wallets: w,
      apps: { nodeHostIp: '10.1.2.3', node: { tier: 'cumulus', continent: 'EU', country: 'CZ', region: 'PRG', faultDomain: 'rack-7', reserve: { cpu: 0.5, ram: 1000, hdd: 40 } } },
    });
  });
  after(async () => {
    await node?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const feasible = async (spec: unknown, who: 'coreTeam' | 'owner' = 'coreTeam') => data(await node.post('/apps/placementfeasibility', spec, node.headers[who]));
  const verdict = (r: any, check: string) => r.checks.filter((c: any) => c.check === check);

  it('a spec that fits: every check passes, with the tier and what is left', async () => {
    const r = await feasible(v3Spec(w.owner.legacyid, 'fits', IMG, await freeAppPort2()));
    assert.equal(r.feasible, true, JSON.stringify(r));
    assert.equal(r.tier, 'cumulus');
    assert.deepEqual(r.checks.map((c: any) => c.check), ['specification', 'installed', 'resources.cpu', 'resources.ram', 'resources.hdd', 'ports', 'repository', 'geolocation', 'nodes', 'enterprise']);
    assert.match(verdict(r, 'resources.cpu')[0].message, /needs 0.5 cores, 1.5 cores left on this cumulus node/);
  });

  it('says why not: resources over the tier, a port in use, a blocked repository, geolocation, target nodes, static IP', async () => {
    const busy = net.createServer();
    const port = await freeAppPort2();
    await new Promise<void>((r) => busy.listen(port, '127.0.0.1', () => r()));
    try {
      const big = v8Spec(w.owner.legacyid, 'big', [component('a', IMG, port, 80, { cpu: 2, ram: 8000, hdd: 200 })]);
      const r = await feasible({ ...big, geolocation: ['acNA'], nodes: ['10.9.9.9'], staticip: true });
      assert.equal(r.feasible, false);
      for (const c of ['resources.cpu', 'resources.ram', 'resources.hdd', 'ports', 'geolocation', 'nodes', 'staticip']) assert.equal(verdict(r, c)[0].ok, false, `${c}: ${JSON.stringify(r.checks)}`);
      assert.match(verdict(r, 'ports')[0].message, new RegExp(`port ${port} is in use`));
      assert.match(verdict(r, 'geolocation')[0].message, /EU_CZ_PRG\) is not in NA/);
    } finally {
      busy.close();
    }
    const geo = async (codes: string[]) => verdict(await feasible({ ...v8Spec(w.owner.legacyid, 'geo', [component('a', IMG, await freeAppPort2(), 80)]), geolocation: codes }), 'geolocation')[0].ok;
    assert.equal(await geo(['acEU']), true);
    assert.equal(await geo(['acEU_CZ']), true);
    assert.equal(await geo(['acEU_DE']), false);
    assert.equal(await geo(['a!cEU_CZ']), false);
    assert.equal(verdict(await feasible({ ...v8Spec(w.owner.legacyid, 'tgt', [component('a', IMG, await freeAppPort2(), 80)]), nodes: ['10.1.2.3:16127'] }), 'nodes')[0].ok, true);

    await writePolicy(node.policyFile, w.coreTeam, { blockedRepositories: ['corenode-test/node'] });
    const blocked = await until('policy refreshed', async () => {
      const r = await feasible(v3Spec(w.owner.legacyid, 'blocked', IMG, await freeAppPort2()));
      return verdict(r, 'repository')[0].ok ? null : r;
    });
    assert.match(verdict(blocked, 'repository')[0].message, /blocked by the network policy/);
  });

  it('an invalid specification is one failed check naming the field; a body that is no object is refused', async () => {
    const r = await feasible(v3Spec(w.owner.legacyid, 'banned', IMG, 16127));
    assert.equal(r.feasible, false);
    assert.deepEqual(r.checks.map((c: any) => c.check), ['specification']);
    assert.match(r.checks[0].message, /port 16127 is banned/);
    assert.equal(error(await node.post('/apps/placementfeasibility', '[1,2]', node.headers.coreTeam)).code, 400);
    assert.equal(error(await node.post('/apps/placementfeasibility', '{bad json', node.headers.coreTeam)).code, 400);
  });

  it('levels: the core team; the owner of an unregistered name, the admin, another user and anonymous are refused', async () => {
    const spec = v3Spec(w.owner.legacyid, 'levels', IMG, await freeAppPort2());
    for (const who of ['owner', 'admin', 'other'] as const) assert.equal(error(await node.post('/apps/placementfeasibility', spec, node.headers[who])).code, 401, who);
    assert.equal(error(await node.post('/apps/placementfeasibility', spec)).code, 401);
    for (const who of ['owner', 'admin', 'other'] as const) assert.equal(error(await node.get('/apps/placementlocations', node.headers[who])).code, 401, who);
    assert.equal(error(await node.get('/apps/placementlocations')).code, 401);
    assert.equal(error(await node.get('/apps/placementlocations?appname=nosuchapp', node.headers.owner)).code, 401);
  });

  it('placementlocations: the node with its tier, geolocation, fault domain and resources', async () => {
    const d = data(await node.get('/apps/placementlocations', node.headers.coreTeam));
    assert.deepEqual(d.node.geolocation, { continent: 'EU', country: 'CZ', region: 'PRG' });
    assert.equal(d.node.tier, 'cumulus');
    assert.equal(d.node.ip, '10.1.2.3');
    assert.deepEqual(d.node.resources, { total: { cpu: 1.5, ram: 7000, hdd: 180 }, locked: { cpu: 0, ram: 0, hdd: 0 }, free: { cpu: 1.5, ram: 7000, hdd: 180 } });
    assert.deepEqual(d.faultDomains, [{ id: 'rack-7', nodes: ['10.1.2.3'] }]);
    assert.deepEqual(d.tiers, { cumulus: ['10.1.2.3'], nimbus: [], stratus: [] });
    assert.deepEqual(d.peers, []);
    assert.equal(error(await node.get('/apps/placementlocations?x=1', node.headers.coreTeam)).code, 400);
  });

  it('GET/POST /apps/placement: the operator turns placement off and limits it at once; admin only; bad input named', async () => {
    const before = data(await node.get('/apps/placement', node.headers.admin));
    assert.deepEqual(before.inForce, { enabled: true, maxApps: 100, maxResources: { cpu: 0, ram: 0, hdd: 0 } });
    assert.equal(before.network, false);
    const set = data(await node.post('/apps/placement', { enabled: false, maxApps: 3, maxResources: { ram: 4000 } }, node.headers.admin));
    assert.deepEqual(set.inForce, { enabled: false, maxApps: 3, maxResources: { cpu: 0, ram: 4000, hdd: 0 } });
    assert.equal(data(await node.get('/apps/placement', node.headers.admin)).inForce.enabled, false);
    for (const bad of [{ enabled: 'no' }, { maxApps: -1 }, { maxResources: { ram: -5 } }, { other: 1 }]) assert.equal(error(await node.post('/apps/placement', bad, node.headers.admin)).code, 400, JSON.stringify(bad));
    for (const who of ['owner', 'other', 'coreTeam'] as const) {
      assert.equal(error(await node.get('/apps/placement', node.headers[who])).code, 401, who);
      assert.equal(error(await node.post('/apps/placement', { enabled: true }, node.headers[who])).code, 401, who);
    }
    assert.deepEqual(data(await node.post('/apps/placement', { reset: true }, node.headers.admin)).inForce, before.inForce);
  });

  it('placementfeasibility with {name}: a name that is not a global app is a 404 naming it', async () => {
    const e = error(await node.post('/apps/placementfeasibility', { name: 'nosuchapp' }, node.headers.coreTeam));
    assert.equal(e.code, 404);
    assert.match(e.message, /nosuchapp is not a global app/);
  });
});
