/**
 * The apps plugin on the peer network, with real parts: eight node processes (127.0.0.2-9) sharing one
 * regtest litecoind (each node runs its own explorer over it) and one dockerd. Needs Docker: run it in a
 * network namespace, `scripts/dev/in-netns.sh h17 npx mocha test/peers/apps.test.ts`.
 * - the signed network policy a node takes from its source reaches the nodes that have none;
 * - an app registered on one node is a temporary message on all, and global on all after its payment;
 * - a node that installs it is its location on every node;
 * - a global appstop sent to a node that does not run the app stops it where it runs, as the owner, with
 *   no session header leaving the node the owner called; a command naming a caller who is not the owner
 *   is refused there.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { login } from '../support/wallets.ts';
import { eventually } from '../support/wait.ts';
import { component, freeAppPort, hardNofile, last, makeWallets, ndjson, pay, signedMessage, v8Spec, writePolicy } from '../apps/support.ts';
import { generateKeys } from '../../plugins/peers/protocol/keys.ts';
import { PeerNode } from '../../plugins/peers/protocol/node.ts';
import { wsTransport } from '../../plugins/peers/ws-transport.ts';
import { Cluster, data, type ClusterNode } from './cluster.ts';

const PORT = 27700;
const APP = 'peerglobal';
/** Eight nodes: the proof size (each runs its own explorer over the shared litecoind). */
const N = Number(process.env.PEERS_APPS_NODES ?? 8);

describe('peer network: apps across eight node processes (Docker, litecoind)', function () {
  this.timeout(300_000);
  const w = makeWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let c: Cluster;
  let n: ClusterNode[];
  let registryAddress: string;
  const h: Record<string, Record<string, string>>[] = [];

  const running = async (name: string) => JSON.parse(await docker.cli(['inspect', name]))[0].State.Running as boolean;

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    await ltc.mine(101);
    registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    c = new Cluster({
      n: N,
      port: PORT,
      plugins: ['identity', 'daemon', 'explorer', 'apps', 'peers'],
      operator: w.admin.legacyid,
      coreTeam: [w.coreTeam.legacyid],
      // Membership open: this file has no node list (test/peers/network.test.ts proves nodelist).
      peers: { minimums: { outgoing: 1, uniqueOutgoingIps: 1, incoming: 1, uniqueIncomingIps: 1 }, membership: 'open' },
      extra: () => {
        return {
          daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password } },
          explorer: { pollIntervalMs: 50, retryIntervalMs: 100, prefetch: 8 },
          apps: {
            docker: { socketPath: docker.socketPath, nofile: hardNofile() },
            publishHost: '127.0.0.1',
            registryAddress,
            paymentPollMs: 100,
            reconcileIntervalMs: 200,
            // Only node 0 gets a policy source (below): the others get the policy from their peers.
            policy: { sources: [], refreshSeconds: 0.2 },
            price: { coinUsd: 1 },
          },
        };
      },
    });
    const policyFile = path.join(c.root, 'policy-source.json');
    await writePolicy(policyFile, w.coreTeam);
    const cfg0 = JSON.parse(fs.readFileSync(c.nodes[0].configFile, 'utf8'));
    cfg0.apps.policy.sources = [policyFile];
    fs.writeFileSync(c.nodes[0].configFile, JSON.stringify(cfg0));
    n = c.nodes;
    await c.startAll();
    for (const node of n) {
      const x: Record<string, Record<string, string>> = {};
      for (const k of ['owner', 'coreTeam', 'other'] as const) x[k] = { legacyidauth: (await login(node.client, w[k])).header };
      h.push(x);
    }
  });

  after(async () => {
    if (n) await n[0].get(`/apps/appremove/${APP}/true`, h[0]?.coreTeam).catch(() => {});
    await c?.stop().catch(() => {});
    await ltc?.stop();
    if (c) {
      await unmountUnder(c.root).catch(() => {});
      fs.rmSync(c.root, { recursive: true, force: true });
    }
  });

  it('the signed network policy taken on one node reaches the nodes without a source', async () => {
    await eventually(async () => (await Promise.all(n.map(async (x) => (await x.get('/apps/networkpolicy')).json?.data))).every((p) => p?.held === true), {
      what: 'the policy on all',
      everyMs: 300,
    });
    const p2 = data(await n[2].get('/apps/networkpolicy'));
    assert.match(p2.source, /^peer /);
    assert.equal(p2.signer, w.coreTeam.legacyid);
  });

  it('placementlocations lists the other nodes from their running notices', async () => {
    const places = await eventually(
      async () => {
        const p = data(await n[2].get('/apps/placementlocations', h[2].coreTeam));
        return p.peers.length === N - 1 && p;
      },
      { what: 'every other node placed', everyMs: 300 },
    );
    assert.deepEqual(places.peers.map((p: any) => p.ip).sort(), n.filter((x) => x.i !== 2).map((x) => `${x.ip}:${PORT}`).sort());
    assert.ok(places.peers.every((p: any) => typeof p.tier === 'string' && p.resources?.free));
    assert.equal(Object.values(places.tiers).flat().length, N);
    assert.equal((await n[2].get('/apps/placementlocations', h[2].other)).json.data.code, 401);
  });

  it('an app registered on one node is a temporary message on all, and global on all after its payment', async () => {
    const port = await freeAppPort();
    const spec = v8Spec(w.owner.legacyid, APP, [component('api', docker.images.node, port, 9000)]);
    const hash = data(await n[1].post('/apps/appregister', await signedMessage(w.owner, spec), h[1].owner));
    await eventually(async () => (await Promise.all(n.map(async (x) => data(await x.get(`/apps/temporarymessages/${hash}`)).length))).every((l) => l === 1), {
      what: 'the temporary message on all',
      everyMs: 200,
    });
    await pay(ltc, registryAddress, data(await n[1].post('/apps/calculateprice', spec)), hash);
    await ltc.mine(1);
    await eventually(async () => (await Promise.all(n.map(async (x) => (await x.get(`/apps/appspecifications/${APP}`)).json?.status))).every((s) => s === 'success'), {
      what: 'global on all',
      everyMs: 300,
    });
  });

  it('the node that installs it is its location everywhere; a global appstop from another node stops it there', async () => {
    const lines = ndjson(await n[0].get(`/apps/installapplocally/${APP}`, h[0].coreTeam));
    assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    await eventually(async () => (await Promise.all(n.map(async (x) => data(await x.get(`/apps/location/${APP}`))))).every((l) => l.length === 1 && l[0].ip === `127.0.0.2:${PORT}`), {
      what: 'the location on all',
      everyMs: 300,
    });
    await eventually(() => running(`coreapi_${APP}`), { what: 'running' });

    // A rogue peer naming a caller who does not own the app: refused where the app runs.
    const keys = generateKeys();
    const rogue = new PeerNode(keys, wsTransport({ localAddress: '127.0.0.1', maxPayload: 65536, path: '/ws/core', timeoutMs: 5000 }), { ip: '127.0.0.1', port: 25996, seeds: [] }, {
      now: () => Date.now(),
      setTimer: (fn, ms) => {
        const t = setTimeout(fn, ms);
        return { clear: () => clearTimeout(t) };
      },
    });
    try {
      assert.equal(await rogue.connect(`127.0.0.3:${PORT}`), 'initiated');
      await eventually(() => rogue.outgoing().length === 1, { what: 'rogue joined' });
      const results: any[] = [];
      rogue.on('appcommandresult', (m) => results.push(m.payload));
      rogue.broadcast('appcommand', { id: 'rogue-1', verb: 'appstop', app: APP, caller: w.other.legacyid, issuedAt: Date.now() });
      await eventually(() => results.find((r) => r.id === 'rogue-1'), { what: 'the refusal' });
      assert.equal(results.find((r) => r.id === 'rogue-1').ok, false);
      assert.equal(await running(`coreapi_${APP}`), true);
    } finally {
      rogue.stop();
    }

    // The owner, logged in on node 2 (which does not run the app), stops it everywhere.
    assert.equal((await n[2].get(`/apps/appstop/${APP}/true`, h[2].other)).json.data.code, 401);
    const answer = data(await n[2].get(`/apps/appstop/${APP}/true`, h[2].owner));
    assert.match(answer.message, /^Global appstop of peerglobal sent to the 1 other node\(s\) that run it$/);
    await eventually(async () => !(await running(`coreapi_${APP}`)), { what: 'stopped on node 0', everyMs: 200 });
    // And the core team starts it again the same way.
    data(await n[1].get(`/apps/appstart/${APP}/true`, h[1].coreTeam));
    await eventually(() => running(`coreapi_${APP}`), { what: 'started again on node 0', everyMs: 200 });
  });
});
