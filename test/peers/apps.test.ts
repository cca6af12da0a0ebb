/**
 * The apps plugin on the peer network, with real parts: eight node processes (127.0.0.2-9) sharing one
 * regtest litecoind (each node runs its own explorer over it) and one dockerd. Needs Docker: run it in a
 * network namespace, `scripts/dev/in-netns.sh h17 npx mocha test/peers/apps.test.ts`.
 * - the signed network policy a node takes from its source reaches the nodes that have none;
 * - an app registered on one node is a temporary message on all, and global on all after its payment;
 * - the three nodes that install it (nodes 0-2, each with its own dockerd: test/peers/extra-dockerd.ts)
 *   are its locations on every node;
 * - a global appstop sent to a node that does not run the app, signed by the owner, stops it on all three
 *   with no session header leaving the node the owner called; a listed peer's appremove naming the owner
 *   with no signature, another wallet's, a caller who is not the owner, or no origin proof is refused there,
 *   as is its replay of the owner's real command, and the app runs on; a signed global appstart, redeploy
 *   and appremove reach all three the same way; the remove withdraws the app from placement on all eight.
 * Membership `nodelist`: the node list comes from the TEST-ONLY corenode RPC double in front of the
 * litecoind (test/node/doubles; every other call, the explorers' included, goes through to litecoind).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TEST_REGISTRY_HOSTS, ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { login } from '../support/wallets.ts';
import { eventually } from '../support/wait.ts';
import { component, freeAppPort, globalQuery, hardNofile, last, makeWallets, ndjson, pay, signedCommand, signedMessage, v8Spec, writePolicy } from '../apps/support.ts';
import { generateKeys } from '../../plugins/peers/protocol/keys.ts';
import { PeerNode } from '../../plugins/peers/protocol/node.ts';
import { wsTransport } from '../../plugins/peers/ws-transport.ts';
import crypto from 'node:crypto';
import { nodeSigner } from '../../lib/nodelist/signature.ts';
import { originText, proofText } from '../../plugins/peers/membership.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble } from '../node/doubles/corenode-rpc-double.ts';
import { Cluster, data, type ClusterNode } from './cluster.ts';
import { startExtraDockerd, type ExtraDockerd } from './extra-dockerd.ts';

const PORT = 27700;
const APP = 'peerglobal';
/** Eight nodes: the proof size (each runs its own explorer over the shared litecoind). */
const N = Number(process.env.PEERS_APPS_NODES ?? 8);
/** The nodes that run the app: node 0 on the shared dockerd, nodes 1 and 2 each on an extra one. */
const RUNNERS = [0, 1, 2];
const newSigner = () => {
  const secret = crypto.randomBytes(32).toString('hex');
  return { secret, ...nodeSigner(secret) };
};

describe('peer network: apps across eight node processes (Docker, litecoind)', function () {
  this.timeout(300_000);
  const w = makeWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let c: Cluster;
  let n: ClusterNode[];
  let registryAddress: string;
  const h: Record<string, Record<string, string>>[] = [];
  let extra: ExtraDockerd[] = [];
  let rpc: CorenodeRpcDouble;
  const nodeKeys = Array.from({ length: N }, newSigner);
  /** Listed at 127.0.0.1: the test's own peer. */
  const testKey = newSigner();
  /** The docker CLI of node i's dockerd. */
  const cliOf = (i: number) => (i === 0 ? docker.cli : extra[i - 1].cli);
  const inspect = (i: number, name: string) => (i === 0 ? docker : extra[i - 1]).inspect(name);
  const running = async (name: string, i = 0) => (await inspect(i, name)).State.Running as boolean;
  const onAll = async (f: (i: number) => Promise<boolean>) => (await Promise.all(RUNNERS.map(f))).every(Boolean);

  before(async () => {
    // allSettled: when one start fails, the ones that came up are kept for `after` to stop (with
    // Promise.all a failed dockerd left the litecoind and the extra dockerds running).
    const [d, l, ...x] = await Promise.allSettled([ensureDocker(), startLitecoind(), startExtraDockerd(), startExtraDockerd()]);
    const value = <T,>(r: PromiseSettledResult<unknown>) => (r.status === 'fulfilled' ? (r.value as T) : undefined);
    docker = value<TestDocker>(d)!;
    ltc = value<Regtest>(l)!;
    extra = x.map((r) => value<ExtraDockerd>(r)).filter((e): e is ExtraDockerd => !!e);
    const failed = [d, l, ...x].find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) throw failed.reason;
    await ltc.mine(101);
    rpc = await startCorenodeRpcDouble(ltc);
    rpc.nodeList = [...nodeKeys.map((k, i) => ({ ip: `127.0.0.${2 + i}`, pubkey: k.pubKey })), { ip: '127.0.0.1', pubkey: testKey.pubKey }];
    registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    c = new Cluster({
      n: N,
      port: PORT,
      plugins: ['identity', 'daemon', 'explorer', 'apps', 'peers'],
      operator: w.admin.legacyid,
      coreTeam: [w.coreTeam.legacyid],
      // Pings every 5 s, not the cluster's 1 s: each signs a ping and a topology report to every peer and
      // verifies theirs (a tenth of these nodes' CPU, profiled), and nothing here waits on a ping.
      peers: { minimums: { outgoing: 1, uniqueOutgoingIps: 1, incoming: 1, uniqueIncomingIps: 1 }, membership: 'nodelist', pingMs: 5000 },
      extra: (i) => {
        return {
          peers: { nodePrivateKey: nodeKeys[i].secret },
          daemon: { rpc: { url: rpc.url, user: ltc.user, password: ltc.password } },
          // Eight explorers polling one litecoind (through the RPC double in this process) at 50 ms were
          // 160 idle RPCs a second, the largest share of this file's CPU; a block is seen within 500 ms.
          explorer: { pollIntervalMs: 500, retryIntervalMs: 100, prefetch: 8 },
          apps: {
            // Own dockerd for nodes 1 and 2; app networks and published ports apart per node.
            docker: { socketPath: i >= 1 && i <= extra.length ? extra[i - 1].socketPath : docker.socketPath, nofile: hardNofile(), subnetBase: `172.${40 + i}` },
            publishHost: `127.0.0.${2 + i}`,
            registryAddress,
            privateRegistries: TEST_REGISTRY_HOSTS,
            paymentPollMs: 100,
            // Each round lists the containers on a dockerd: only the nodes that run the app need it often
            // (the five others, on the shared dockerd, never run anything here).
            reconcileIntervalMs: RUNNERS.includes(i) ? 200 : 5000,
            // Only node 0 gets a policy source (below): the others get the policy from their peers.
            policy: { sources: [], refreshSeconds: 0.2 },
            price: { coinUsd: 1 },
            // The app is placed by hand on the three runners here; placement has its own tests.
            placement: { enabled: false },
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
    await rpc?.close();
    await ltc?.stop();
    await Promise.all(extra.map((x) => x.stop()));
    if (c) {
      await unmountUnder(c.root).catch(() => {});
      fs.rmSync(c.root, { recursive: true, force: true });
    }
  });

  /** A peer of the test, listed at 127.0.0.1 (it proves `testKey`), joined to node 3. */
  async function testPeer(port: number) {
    const keys = generateKeys();
    const peer = new PeerNode(keys, wsTransport({ localAddress: '127.0.0.1', maxPayload: 65536, path: '/ws/core', timeoutMs: 5000 }), { ip: '127.0.0.1', port, seeds: [] }, {
      admission: { proof: (k, nonce) => ({ pubKey: testKey.pubKey, sig: testKey.sign(proofText(k, nonce)) }), admit: async () => ({ ok: true as const, pubKey: '' }) },
      now: () => Date.now(),
      setTimer: (fn, ms) => {
        const t = setTimeout(fn, ms);
        return { clear: () => clearTimeout(t) };
      },
    });
    assert.equal(await peer.connect(`127.0.0.5:${PORT}`), 'initiated');
    await eventually(() => peer.outgoing().length === 1, { what: `test peer ${port} joined` });
    return { peer, keys };
  }

  it('the signed network policy taken on one node reaches the nodes without a source', async () => {
    await eventually(async () => (await Promise.all(n.map(async (x) => (await x.get('/apps/networkpolicy')).json?.data))).every((p) => p?.held === true), {
      what: 'the policy on all',
      everyMs: 300, timeoutMs: 180_000,
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
      everyMs: 300, timeoutMs: 180_000,
    });
  });

  it('the nodes that install it are its locations everywhere; a global appstop from another node stops it on all', async () => {
    await Promise.all(
      RUNNERS.map(async (i) => {
        const lines = ndjson(await n[i].get(`/apps/installapplocally/${APP}`, h[i].coreTeam));
        assert.equal(last(lines).status, 'success', `node ${i}: ${JSON.stringify(last(lines))}`);
      }),
    );
    const where = RUNNERS.map((i) => `127.0.0.${2 + i}:${PORT}`).sort();
    await eventually(async () => (await Promise.all(n.map(async (x) => data(await x.get(`/apps/location/${APP}`))))).every((l) => JSON.stringify(l.map((e: any) => e.ip).sort()) === JSON.stringify(where)), {
      what: 'the three locations on all',
      everyMs: 300, timeoutMs: 180_000,
    });
    await eventually(() => onAll((i) => running(`coreapi_${APP}`, i)), { what: 'running on the three', timeoutMs: 180_000 });

    // A listed peer (the test's own listed key) sends appremove naming the owner: with no signature, with a
    // signature of another wallet, naming a caller who does not own the app (validly signed by it), and
    // with no proof that its origin is a listed node. Refused where the app runs; it runs on (Docker).
    const { peer: rogue, keys } = await testPeer(25996);
    try {
      const results: any[] = [];
      const heard: any[] = [];
      rogue.on('appcommandresult', (m) => results.push(m.payload));
      rogue.on('appcommand', (m) => heard.push(m.payload));
      const sender = { pubKey: testKey.pubKey, ip: '127.0.0.1', sig: testKey.sign(originText(keys.publicKey, '127.0.0.1')) };
      const remove = { verb: 'appremove', app: APP, force: true, issuedAt: Date.now(), sender };
      rogue.broadcast('appcommand', { ...remove, id: 'rogue-unsigned', caller: w.owner.legacyid });
      rogue.broadcast('appcommand', { ...remove, id: 'rogue-forged', caller: w.owner.legacyid, ...(await signedCommand(w.other, 'appremove', APP, true)) });
      rogue.broadcast('appcommand', { ...remove, id: 'rogue-other', caller: w.other.legacyid, ...(await signedCommand(w.other, 'appremove', APP, true)) });
      rogue.broadcast('appcommand', { ...remove, id: 'rogue-noorigin', caller: w.owner.legacyid, sender: undefined, ...(await signedCommand(w.owner, 'appremove', APP, true)) });
      const of = (id: string) => results.filter((r) => r.id === id);
      const refusals: Record<string, RegExp> = {
        'rogue-unsigned': /timestamp: a global command carries the time it was signed/,
        'rogue-forged': /signature: not .* signature of this command/,
        'rogue-other': /may not appremove/,
        'rogue-noorigin': /no proof that its origin is a listed node/,
      };
      await eventually(() => Object.keys(refusals).every((id) => of(id).length === RUNNERS.length), { what: 'the refusals of the three' });
      for (const [id, re] of Object.entries(refusals)) assert.ok(of(id).every((r) => r.ok === false && re.test(r.message)), `${id}: ${JSON.stringify(of(id))}`);
      assert.ok(await onAll((i) => running(`coreapi_${APP}`, i)));

      // The owner, logged in on node 3 (which does not run the app), stops it everywhere, signing the command.
      assert.equal((await n[3].get(`/apps/appstop/${APP}/true${await globalQuery(w.other, 'appstop', APP)}`, h[3].other)).json.data.code, 401);
      assert.match((await n[3].get(`/apps/appstop/${APP}/true`, h[3].owner)).json.data.message, /refused: timestamp: /);
      const answer = data(await n[3].get(`/apps/appstop/${APP}/true${await globalQuery(w.owner, 'appstop', APP)}`, h[3].owner));
      assert.match(answer.message, /^Global appstop of peerglobal sent to the 3 other node\(s\) that run it$/);
      await eventually(async () => onAll(async (i) => !(await running(`coreapi_${APP}`, i))), { what: 'stopped on the three', everyMs: 200 });
      // And the core team starts it again the same way.
      data(await n[4].get(`/apps/appstart/${APP}/true${await globalQuery(w.coreTeam, 'appstart', APP)}`, h[4].coreTeam));
      await eventually(() => onAll((i) => running(`coreapi_${APP}`, i)), { what: 'started again on the three', everyMs: 200 });

      // The peer heard the owner's signed appstop; sent again, it is a replay everywhere: the app runs on.
      const stop = await eventually(() => heard.find((c) => c.verb === 'appstop' && c.caller === w.owner.legacyid), { what: 'the owner’s appstop heard' });
      rogue.broadcast('appcommand', { ...stop, id: 'rogue-replay', issuedAt: Date.now(), sender });
      await eventually(() => of('rogue-replay').length === RUNNERS.length, { what: 'the replay refused by the three' });
      assert.ok(of('rogue-replay').every((r) => r.ok === false && /already taken \(a replay\)/.test(r.message)), JSON.stringify(of('rogue-replay')));
      assert.ok(await onAll((i) => running(`coreapi_${APP}`, i)));
    } finally {
      rogue.stop();
    }
  });

  it('a global redeploy and a global appremove reach every node that runs the app', async () => {
    const ids = await Promise.all(RUNNERS.map(async (i) => (await inspect(i, `coreapi_${APP}`)).Id as string));
    // Sent from a node that does not run it: the envelope, with the command's id.
    assert.equal((await n[5].get(`/apps/redeploy/${APP}/false/true`, h[5].other)).json.data.code, 401);
    const { peer: listener } = await testPeer(31995);
    const outcomes: any[] = [];
    listener.on('appcommandresult', (m) => outcomes.push(m.payload));
    const r = data(await n[5].get(`/apps/redeploy/${APP}/false/true${await globalQuery(w.owner, 'redeploy', APP, false)}`, h[5].owner));
    assert.match(r.message, /^Global redeploy of peerglobal sent to the 3 other node\(s\) that run it$/);
    assert.match(r.here.message, /not installed on this node/);
    await eventually(
      async () =>
        onAll(async (i) => {
          const now = await inspect(i, `coreapi_${APP}`).catch(() => null);
          return !!now && now.Id !== ids[i] && now.State.Running;
        }),
      { what: 'recreated and running on the three', everyMs: 300 },
    );
    // A running container is not the end of a redeploy (its record is written after the start): the
    // appremove below would find a node's install slot still taken (409 Busy) on a loaded machine. The
    // end is each node's outcome of the command, which the listener heard.
    await eventually(() => outcomes.filter((o) => o.id === r.commandId).length === RUNNERS.length, { what: 'the redeploy outcome of the three', everyMs: 100 });
    assert.ok(outcomes.filter((o) => o.id === r.commandId).every((o) => o.ok), JSON.stringify(outcomes));
    listener.stop();

    // Sent from a node that runs it: its own progress stream, whose first line says where the command went.
    assert.equal((await n[0].get(`/apps/appremove/${APP}/false/true`, h[0].other)).json.data.code, 401);
    const lines = ndjson(await n[0].get(`/apps/appremove/${APP}/false/true${await globalQuery(w.owner, 'appremove', APP, false)}`, h[0].owner));
    assert.deepEqual({ ...lines[0], commandId: typeof lines[0].commandId }, { status: 'global', message: 'Global appremove of peerglobal sent to the 2 other node(s) that run it', commandId: 'string' });
    assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    await eventually(async () => onAll(async (i) => (await cliOf(i)(['ps', '-aq', '--filter', `name=coreapi_${APP}`])).trim() === ''), { what: 'removed on the three', everyMs: 300 });
    await eventually(async () => (await Promise.all(n.map(async (x) => data(await x.get(`/apps/location/${APP}`))))).every((l) => l.length === 0), { what: 'no location left', everyMs: 300 });
    // Withdrawn from placement everywhere, on the nodes that never ran it too (none places it again).
    await eventually(
      async () =>
        (await Promise.all(n.map(async (x, i) => data(await x.post('/apps/placementfeasibility', { name: APP }, h[i].owner)).checks.find((c: any) => c.check === 'withdrawn')?.ok === false))).every(Boolean),
      { what: 'withdrawn on all eight', everyMs: 300 },
    );
  });
});
