/**
 * The placement loop (plugins/apps/placement-loop.ts) around the planner: what it does with the planner's
 * actions, on a virtual clock, with a double of the peer network (`peerNetworkDouble`: only what the loop
 * reads) and of the installer's routes. The network behaviour runs on real nodes in test/network.
 */
import assert from 'node:assert/strict';
import type { AppsHeard, PeerNetwork } from '../../plugins/peers/api.ts';
import { PlacementLoop, type PlacementConfig } from '../../plugins/apps/placement-loop.ts';
import type { GlobalSpec } from '../../plugins/apps/registry.ts';

const CONFIG: PlacementConfig = {
  enabled: true,
  maxApps: 10,
  maxResources: { cpu: 0, ram: 0, hdd: 0 },
  tickMs: 1000,
  reannounceMs: 15_000,
  fitCacheMs: 30_000,
  warmupMs: 20_000,
  goneAfterMs: 45_000,
  delayWindowMs: 10_000,
  settleMs: 3000,
  backoffBaseMs: 60_000,
  backoffMaxMs: 3_600_000,
};

function peerNetworkDouble(over: Partial<{ links: number; heard: AppsHeard }> = {}) {
  const state = { links: over.links ?? 2, heard: over.heard ?? (new Map() as AppsHeard) };
  const net = {
    nodeKey: 'self-key',
    heard: () => state.heard,
    address: () => '10.0.0.1:16127',
    links: () => Array.from({ length: state.links }, () => ({ ip: '10.0.0.2', port: 16127, direction: 'outbound', nodeKey: 'k' })),
  } as unknown as PeerNetwork;
  return { net, state };
}

const spec = (name: string, instances = 1): GlobalSpec => ({
  name,
  owner: 'owner',
  originalOwner: 'owner',
  hash: `hash-${name}`,
  height: 100,
  hashes: [`hash-${name}`],
  expireHeight: 10_000,
  appSpecification: { version: 8, name, instances, compose: [{ name: 'web', containerData: '/data', ports: [31500] }] },
});

function harness(o: { globals?: GlobalSpec[]; fit?: boolean; install?: (app: string) => Promise<void>; links?: number; limits?: { enabled: boolean; maxApps: number } } = {}) {
  let t = 1_000_000;
  const events: { name: string; data: Record<string, unknown> }[] = [];
  const installs: string[] = [];
  const installed: { name: string; hash: string; installedAt: number }[] = [];
  const { net, state } = peerNetworkDouble({ links: o.links });
  const loop = new PlacementLoop({
    config: CONFIG,
    limits: () => ({ maxResources: CONFIG.maxResources, ...(o.limits ?? { enabled: true, maxApps: 10 }) }),
    peers: () => net,
    globals: async () => o.globals ?? [spec('a')],
    installed: async () => installed,
    height: () => 200,
    fit: async () => (o.fit === false ? { ok: false, reasons: ['no room'] } : { ok: true, reasons: [] }),
    install: async (app) => {
      installs.push(app);
      if (o.install) await o.install(app);
      installed.push({ name: app, hash: `hash-${app}`, installedAt: t });
    },
    remove: async () => {},
    emit: (name, data) => events.push({ name, data }),
    now: () => t,
    log: { info() {}, warn() {}, debug() {}, error() {} } as never,
  });
  const run = async (ms: number) => {
    for (let end = t + ms; t < end; t += CONFIG.tickMs) {
      await loop.tick();
      // The install runs beside the ticks: let it end.
      await new Promise((r) => setImmediate(r));
    }
  };
  return { loop, run, events, installs, installed, state, now: () => t };
}

describe('apps: placement loop', function () {
  it('with no peers it plans nothing; with peers only after the warm-up', async () => {
    const h = harness({ links: 0 });
    await h.run(60_000);
    assert.deepEqual(h.installs, []);
    assert.match(h.loop.view().last.waiting ?? '', /no peers/);
    h.state.links = 1;
    await h.run(CONFIG.warmupMs - 2000);
    assert.deepEqual(h.installs, []);
    assert.match(h.loop.view().last.waiting ?? '', /hearing the network/);
    await h.run(30_000);
    assert.deepEqual(h.installs, ['a']);
  });

  it('announces installing with its first announcement time, re-announces it during a long pull, installs once', async () => {
    let finish!: () => void;
    const h = harness({ install: () => new Promise<void>((r) => (finish = r)) });
    await h.run(CONFIG.warmupMs + 20_000);
    const first = h.events.find((e) => e.name === 'apps.installing');
    assert.ok(first, 'announced');
    await h.run(40_000);
    const again = h.events.filter((e) => e.name === 'apps.installing');
    assert.ok(again.length >= 3, `re-announced during the pull (${again.length})`);
    assert.ok(again.every((e) => e.data.announcedAt === first.data.announcedAt), 'the first announcement time is kept');
    assert.deepEqual(h.installs, ['a']);
    finish();
    await h.run(5000);
    assert.deepEqual(h.installs, ['a']);
    const decisions = h.events.filter((e) => e.name === 'apps.placement').map((e) => e.data.action);
    assert.ok(decisions.includes('announce-installing') && decisions.includes('install'), decisions.join(','));
  });

  it('a failed install backs off: one attempt per back-off, not a tight loop', async () => {
    const h = harness({ install: async () => Promise.reject(new Error('pull access denied')) });
    await h.run(CONFIG.warmupMs + 5 * 60_000);
    // 1 min, 2 min, 4 min back-off: the 5 minutes after the first attempt hold 3 attempts at most.
    assert.ok(h.installs.length >= 2 && h.installs.length <= 3, `${h.installs.length} attempts`);
    assert.match(String(h.loop.view().failures.a?.error), /pull access denied/);
  });

  it('an installer slot busy with a hand-made install is not a failure: asked again', async () => {
    let busy = true;
    const h = harness({
      install: async () => {
        if (busy) {
          busy = false;
          throw Object.assign(new Error('Another installation is running'), { code: 409 });
        }
      },
    });
    await h.run(CONFIG.warmupMs + 30_000);
    assert.deepEqual(h.installs, ['a', 'a']);
    assert.equal(h.loop.view().failures.a, undefined);
  });

  it('not fit, or placement disabled: never announces', async () => {
    for (const h of [harness({ fit: false }), harness({ limits: { enabled: false, maxApps: 10 } })]) {
      await h.run(CONFIG.warmupMs + 60_000);
      assert.deepEqual(h.installs, []);
      assert.equal(h.events.filter((e) => e.name === 'apps.installing').length, 0);
    }
  });
});
