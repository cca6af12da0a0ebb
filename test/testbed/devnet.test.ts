/**
 * `npm run devnet -- --nodes 2 --json` as a person's script runs it: a child process (its own process
 * group, as a terminal's foreground job), the JSON line read from its output, each node's URL called from
 * this machine's own namespace, the chain's RPC URL and the funded key checked, then Ctrl-C (SIGINT to the
 * group) and nothing of the devnet left: no namespace, no process, no folder, the ports closed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../../core/config.ts';
import { leftovers } from '../support/testbed/names.ts';
import { eventually } from '../support/wait.ts';

interface DevnetInfo {
  prefix: string;
  nodes: { name: string; url: string; operatorKey: string; operatorId: string; listedAt: string; nodeKey: string }[];
  chain: { rpcUrl: string; user: string; password: string };
  funded: { key: string; address: string; id: string };
  registryAddress: string | null;
  image: string | null;
}

describe('testbed: npm run devnet', function () {
  this.timeout(90_000);

  it('prints one JSON line once the network is up; every URL answers; Ctrl-C takes it all down', async () => {
    const child = spawn('npm', ['run', 'devnet', '--', '--nodes', '2', '--json'], { cwd: REPO_ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.once('exit', (code, signal) => r(code ?? (signal ? -1 : null))));
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    let info: DevnetInfo | undefined;
    try {
      info = await new Promise<DevnetInfo>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d) => {
          out += d;
          const line = out.split('\n').find((l) => l.startsWith('{') && out.includes(`${l}\n`));
          if (line) resolve(JSON.parse(line));
        });
        child.once('exit', (code) => reject(new Error(`devnet exited (${code}): ${err.slice(-2000)}`)));
      });
      assert.match(info.prefix, /^tb[0-9a-f]{6}$/);
      assert.equal(info.nodes.length, 2);
      assert.deepEqual(info.nodes.map((n) => n.listedAt), ['11.1.0.2:16127', '11.2.0.2:16127']);
      for (const n of info.nodes) {
        assert.match(n.url, /^http:\/\/127\.0\.0\.1:\d+$/);
        assert.match(n.operatorKey, /^[KL][1-9A-HJ-NP-Za-km-z]{51}$/);
        const version = await (await fetch(`${n.url}/core/version`)).json();
        assert.equal(version.status, 'success');
      }
      // Seeded with node1, node2 links to it.
      await eventually(async () => ((await (await fetch(`${info!.nodes[1].url}/core/connectedpeers`)).json()).data as string[]).includes('11.1.0.2'), { what: 'node2 linked to node1', everyMs: 300 });
      // The chain's RPC URL, from this namespace: the funded key's coins are in the daemon's wallet.
      const rpc = async (method: string, params: unknown[] = []) => {
        const res = await fetch(info!.chain.rpcUrl, {
          method: 'POST',
          headers: { authorization: `Basic ${Buffer.from(`${info!.chain.user}:${info!.chain.password}`).toString('base64')}`, 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '1.0', id: 1, method, params }),
        });
        return (await res.json()).result;
      };
      assert.ok((await rpc('getblockcount')) >= 110);
      const unspent = (await rpc('listunspent', [1, 9999999, [info.funded.address]])) as { amount: number }[];
      assert.ok(unspent.reduce((a, u) => a + u.amount, 0) >= 500, JSON.stringify(unspent));
      assert.deepEqual(
        ((await rpc('viewdeterministiclegacynodelist')) as { ip: string; pubkey: string }[]).map((e) => [e.ip, e.pubkey]),
        info.nodes.map((n) => [n.listedAt, n.nodeKey]),
      );
      assert.equal(info.registryAddress, null);
    } finally {
      // Ctrl-C: SIGINT to the whole foreground group (npm, tsx, the devnet).
      process.kill(-child.pid!, 'SIGINT');
      await exited;
    }
    assert.match(err, /devnet: stopped, nothing left/);
    assert.deepEqual(leftovers(info.prefix), []);
    for (const url of [...info.nodes.map((n) => n.url), info.chain.rpcUrl]) await assert.rejects(fetch(url), /fetch failed/);
  });
});
