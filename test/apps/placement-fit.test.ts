/**
 * The placement loop's own fit checks (plugins/apps/placement-fit.ts) beside the feasibility checks: two
 * nodes behind one public address never take apps with the same host port; the operator's limits; the
 * policy held; a withdrawn app.
 */
import assert from 'node:assert/strict';
import type { AppsHeard } from '../../plugins/peers/api.ts';
import { placementChecks, type FitContext } from '../../plugins/apps/placement-fit.ts';
import type { PolicyHolder } from '../../plugins/apps/policy.ts';
import { normalise } from '../../plugins/apps/spec.ts';
import { freeAppPort2 } from './support.ts';

const spec = (name: string, port: number, cpu = 0.5) =>
  normalise({ version: 8, name, owner: 'o', instances: 3, compose: [{ name: 'web', repotag: 'x/y:1', ports: [port], containerPorts: [80], containerData: '/data', cpu, ram: 500, hdd: 5 }] });

function context(over: Partial<FitContext> = {}): FitContext {
  return {
    place: { tier: 'cumulus', continent: '', country: '', region: '', faultDomain: '', staticIp: false, pubkey: '', reserve: { cpu: 0.5, ram: 1000, hdd: 40 } },
    policy: { blocks: () => null, held: null } as unknown as PolicyHolder,
    installed: [],
    publishHost: '127.0.0.1',
    nodeIp: '',
    policyHeld: true,
    maxResources: { cpu: 0, ram: 0, hdd: 0 },
    address: '203.0.113.7:16127',
    self: 'me',
    heard: new Map(),
    portsOf: () => [],
    withdrawn: false,
    ...over,
  };
}
const failed = (r: { checks: { check: string; ok: boolean }[] }) => r.checks.filter((c) => !c.ok).map((c) => c.check);

describe('apps: placement fit', function () {
  it('an app with a host port used by an app on another node behind the same public address is not fit', async () => {
    const port = await freeAppPort2();
    const heard: AppsHeard = new Map([['other', { running: [{ node: 'neighbour', ip: '203.0.113.7:16137', runningSince: 1, heardAt: 1 }], installing: [], errors: [] }]]);
    const r = await placementChecks(spec('web', port), context({ heard, portsOf: (a) => (a === 'other' ? [port] : []) }));
    assert.deepEqual(failed(r), ['sharedaddress']);
    assert.match(r.checks.find((c) => c.check === 'sharedaddress')!.message, new RegExp(`port ${port} is taken by other on another node behind this node's public address 203.0.113.7`));
    // The same app on a node at another address, or another port behind this one: fit.
    const elsewhere: AppsHeard = new Map([['other', { running: [{ node: 'far', ip: '198.51.100.1:16127', runningSince: 1, heardAt: 1 }], installing: [], errors: [] }]]);
    assert.deepEqual(failed(await placementChecks(spec('web', port), context({ heard: elsewhere, portsOf: () => [port] }))), []);
    assert.deepEqual(failed(await placementChecks(spec('web', port), context({ heard, portsOf: () => [port + 1] }))), []);
  });

  it("the operator's limits, the policy not held and a withdrawn app each say why", async () => {
    const port = await freeAppPort2();
    assert.deepEqual(failed(await placementChecks(spec('web', port, 1), context({ maxResources: { cpu: 0.5, ram: 0, hdd: 0 } }))), ['limit.cpu']);
    assert.deepEqual(failed(await placementChecks(spec('web', port), context({ policyHeld: false }))), ['policy']);
    assert.deepEqual(failed(await placementChecks(spec('web', port), context({ withdrawn: true }))), ['withdrawn']);
  });
});
