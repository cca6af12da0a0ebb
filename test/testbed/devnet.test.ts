/**
 * `npm run devnet -- --nodes 2 --json` as a person's script runs it: a child process (its own process
 * group, as a terminal's foreground job), the JSON line read from its output, each node's URL called from
 * this machine's own namespace, the chain's RPC URL and the funded key checked, then Ctrl-C (SIGINT to the
 * group) and nothing of the devnet left: no namespace, no process, no folder, the ports closed.
 * With `--apps` (one node): the devnet's promise to a person, an app registered with the funded key, paid
 * on the chain's RPC URL to the registry address, installed from the sample image, and served on the node's
 * public address; Ctrl-C then removes its container, dockerd, mounts and cgroups too.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import bitcoinMessage from 'bitcoinjs-message';
import { REPO_ROOT } from '../../core/config.ts';
import { base58Decode } from '../../plugins/identity/ids.ts';
import { component, last, ndjson, signedMessage, v8Spec } from '../apps/support.ts';
import { clientAt } from '../support/node.ts';
import { leftovers, PREFIX_RE } from '../support/testbed/names.ts';
import { execIn } from '../support/testbed/procs.ts';
import { eventually } from '../support/wait.ts';
import { login } from '../support/wallets.ts';

interface DevnetInfo {
  prefix: string;
  nodes: { name: string; url: string; operatorKey: string; operatorId: string; listedAt: string; nodeKey: string }[];
  chain: { rpcUrl: string; user: string; password: string };
  funded: { key: string; address: string; id: string };
  coreTeam: { key: string; id: string };
  registryAddress: string | null;
  image: string | null;
}

/**
 * Devnets still running: a test that timed out while its devnet was starting never reached its own
 * interrupt, and in a fresh-clone run that left the chain and the nodes running in their namespaces.
 */
const running = new Set<() => Promise<void>>();

/** `npm run devnet -- <args>` in a process group of its own; resolves with its JSON line. */
async function startDevnet(args: string[]) {
  const child = spawn('npm', ['run', 'devnet', '--', ...args, '--json'], { cwd: REPO_ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  void exited.then(() => running.delete(interrupt));
  const log = { err: '' };
  child.stderr!.on('data', (d) => (log.err += d));
  /** Ctrl-C: SIGINT to the whole foreground group (npm, tsx, the devnet); resolves once npm is gone. */
  const interrupt = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
    await exited;
  };
  running.add(interrupt);
  try {
    const info = await new Promise<DevnetInfo>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        const line = out.split('\n').find((l) => l.startsWith('{') && out.includes(`${l}\n`));
        if (line) resolve(JSON.parse(line));
      });
      child.once('exit', (code) => reject(new Error(`devnet exited (${code}): ${log.err.slice(-2000)}`)));
    });
    return { info, interrupt, log };
  } catch (e) {
    await interrupt();
    throw e;
  }
}

/** A wallet from the WIF and id the devnet printed. */
function walletOf(wif: string, legacyid: string) {
  const key = base58Decode(wif)!.subarray(1, 33);
  return { legacyid, sign: (m: string) => bitcoinMessage.sign(m, key, true).toString('base64') };
}

/** A JSON-RPC call on the chain's RPC URL, as a person's script makes it. */
async function rpcOn(info: DevnetInfo, method: string, params: unknown[] = []): Promise<any> {
  const res = await fetch(info.chain.rpcUrl, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${info.chain.user}:${info.chain.password}`).toString('base64')}`, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

/** Nothing of the devnet left once it stopped. */
async function assertGone(info: DevnetInfo, log: { err: string }) {
  assert.match(log.err, /devnet: stopped, nothing left/);
  assert.deepEqual(leftovers(info.prefix), []);
  for (const url of [...info.nodes.map((n) => n.url), info.chain.rpcUrl]) await assert.rejects(fetch(url), /fetch failed/);
}

describe('testbed: npm run devnet', function () {
  afterEach(async () => {
    for (const stop of [...running]) await stop();
  });
  // A devnet's cold start (tsx, a chain, node processes in namespaces) took over 90 s in a fresh-clone run
  // whose placement shard started its five hosts and dockerds at the same moment; alone it takes 10-20 s.
  this.timeout(180_000);

  it('prints one JSON line once the network is up; every URL answers; Ctrl-C takes it all down', async () => {
    const { info, interrupt, log } = await startDevnet(['--nodes', '2']);
    try {
      assert.match(info.prefix, PREFIX_RE);
      assert.deepEqual(info.nodes.map((n) => n.listedAt), ['11.1.0.2:16127', '11.2.0.2:16127']);
      for (const n of info.nodes) {
        assert.match(n.url, /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.match(n.operatorKey, /^[KL][1-9A-HJ-NP-Za-km-z]{51}$/);
        assert.equal((await (await fetch(`${n.url}/core/version`)).json()).status, 'success');
      }
      // The operator's key logs in as the node's operator (admin).
      const node1 = clientAt(info.nodes[0].url);
      const admin = { legacyidauth: (await login(node1, walletOf(info.nodes[0].operatorKey, info.nodes[0].operatorId))).header };
      assert.equal((await node1.post('/id/checkprivilege', '', admin)).json.data.privilege, 'admin');
      // Seeded with node1, node2 links to it.
      await eventually(async () => ((await (await fetch(`${info.nodes[1].url}/core/connectedpeers`)).json()).data as string[]).includes('11.1.0.2'), { what: 'node2 linked to node1', everyMs: 300 });
      // The chain's RPC URL, from this namespace: the funded key's coins are in the daemon's wallet.
      assert.ok((await rpcOn(info, 'getblockcount')) >= 110);
      const unspent = (await rpcOn(info, 'listunspent', [1, 9999999, [info.funded.address]])) as { amount: number }[];
      assert.ok(unspent.reduce((a, u) => a + u.amount, 0) >= 500, JSON.stringify(unspent));
      assert.deepEqual(
        ((await rpcOn(info, 'viewdeterministiclegacynodelist')) as { ip: string; pubkey: string }[]).map((e) => [e.ip, e.pubkey]),
        info.nodes.map((n) => [n.listedAt, n.nodeKey]),
      );
      assert.deepEqual([info.registryAddress, info.image], [null, null]);
    } finally {
      await interrupt();
    }
    await assertGone(info, log);
  });

  it('--apps: an app registered with the funded key, paid on the chain, installed from the sample image, served; then nothing left', async () => {
    const { info, interrupt, log } = await startDevnet(['--nodes', '1', '--apps']);
    try {
      assert.equal(info.image, '127.0.0.1:5555/corenode-sample/web:1');
      const node = clientAt(info.nodes[0].url);
      // The policy the devnet's core-team key signed.
      await eventually(async () => (await node.get('/apps/networkpolicy')).json?.data?.held === true, { what: 'the policy held', everyMs: 300 });
      assert.equal((await node.get('/apps/networkpolicy')).json.data.signer, info.coreTeam.id);
      const owner = walletOf(info.funded.key, info.funded.id);
      const spec = v8Spec(owner.legacyid, 'sample', [component('web', info.image!, 31080, 8080)]);
      const ownerAuth = { legacyidauth: (await login(node, owner)).header };
      const hash = (await node.post('/apps/appregister', await signedMessage(owner, spec), ownerAuth)).json.data as string;
      assert.match(hash, /^[0-9a-f]{64}$/);
      const price = (await node.post('/apps/calculateprice', spec)).json.data as number;
      const raw = await rpcOn(info, 'createrawtransaction', [[], [{ [info.registryAddress!]: price }, { data: Buffer.from(hash, 'latin1').toString('hex') }]]);
      const funded = await rpcOn(info, 'fundrawtransaction', [raw]);
      const signed = await rpcOn(info, 'signrawtransactionwithwallet', [funded.hex]);
      await rpcOn(info, 'sendrawtransaction', [signed.hex]);
      await rpcOn(info, 'generatetoaddress', [1, info.funded.address]);
      await eventually(async () => (await node.get('/apps/appspecifications/sample')).json?.status === 'success', { what: 'the paid app global', everyMs: 300 });
      const admin = { legacyidauth: (await login(node, walletOf(info.nodes[0].operatorKey, info.nodes[0].operatorId))).header };
      const installed = last(ndjson(await node.get('/apps/installapplocally/sample', admin)));
      assert.equal(installed.status, 'success', JSON.stringify(installed));
      // Served on the node's public address, seen from the internet's namespace.
      const page = execIn(`${info.prefix}-net`, [process.execPath, '-e', "fetch('http://11.1.0.2:31080/').then((r) => r.text()).then(console.log)"]);
      assert.match(page, /Hello from an app on the corenode devnet/);
    } finally {
      await interrupt();
    }
    await assertGone(info, log);
  });
});
