/**
 * The testbed's network (test/support/testbed/net.ts) with real traffic: a probe agent on every host
 * (fixtures/agent.mjs: who-am-I on TCP 7000, UDP echo on 7001, commands from the test over a unix socket)
 * shows who reaches whom and at which source address. Hosts: a public IPv4 host, a dual-stack one, an
 * IPv6-only one; behind router `home` (miniupnpd) two LAN hosts; behind router `office` (static forwards)
 * two more. Then the controls (cut, cutBetween, loss), and that nothing of a testbed is left after its
 * stop, after its process throws, after Ctrl-C, and after a SIGKILL once `sweepStale` ran.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { createNet, type TestNet } from '../support/testbed/net.ts';
import { leftovers, PREFIX_RE, sweepStale } from '../support/testbed/names.ts';
import { lineOf } from '../support/testbed/procs.ts';

const AGENT = path.join(REPO_ROOT, 'test/testbed/fixtures/agent.mjs');
const HOME = '11.201.0.2';
const OFFICE = '11.202.0.2';

interface Result {
  ok: boolean;
  data?: any;
  error?: string;
}

describe('testbed: the network', function () {
  this.timeout(60_000);
  let tb: TestNet;

  /** Run a probe command on host `from`. */
  const ask = (from: string, cmd: Record<string, unknown>) =>
    new Promise<Result>((resolve, reject) => {
      const c = net.connect(path.join(tb.host(from).dir, 'agent.sock'));
      let b = '';
      c.on('data', (d) => (b += d));
      c.on('end', () => resolve(JSON.parse(b)));
      c.on('error', reject);
      c.end(`${JSON.stringify(cmd)}\n`);
    });
  /** From `from`, the address `host` sees it at (or the error). */
  const whoami = async (from: string, host: string, port = 7000, timeoutMs = 5000) => {
    const r = await ask(from, { op: 'tcp', host, port, timeoutMs });
    return r.ok ? r.data : r.error;
  };
  const udpReplies = async (from: string, host: string, count: number) => (await ask(from, { op: 'udp', host, port: 7001, count })).data as number;

  before(async () => {
    tb = await createNet({
      hosts: [
        { name: 'v4' },
        { name: 'dual', ip: 'dual' },
        { name: 'v6', ip: 'v6' },
        { name: 'l1', behind: 'home' },
        { name: 'l2', behind: 'home' },
        { name: 's1', behind: 'office' },
        { name: 's2', behind: 'office' },
      ],
      routers: [
        { name: 'home', upnp: true },
        { name: 'office', forwards: [{ port: 8080, to: 's1', toPort: 7000 }] },
      ],
    });
    await Promise.all(
      tb.hosts.map(async (h) => {
        const p = h.spawn([process.execPath, AGENT, path.join(h.dir, 'agent.sock')], { stdio: ['ignore', 'pipe', 'inherit'] });
        await lineOf(p, /^ready/, `the agent on ${h.name}`);
      }),
    );
  });

  after(async () => {
    await tb?.destroy();
  });

  it('gives public hosts their own addresses, in a /16 each, and they reach each other over IPv4 and IPv6', async () => {
    assert.deepEqual(
      tb.hosts.slice(0, 3).map((h) => [h.v4, h.v6]),
      [
        ['11.1.0.2', undefined],
        ['11.2.0.2', '2001:db8:2::2'],
        [undefined, '2001:db8:3::2'],
      ],
    );
    assert.equal(await whoami('v4', '11.2.0.2'), '11.1.0.2');
    assert.equal(await whoami('dual', '11.1.0.2'), '11.2.0.2');
    assert.equal(await whoami('dual', '2001:db8:3::2'), '2001:db8:2::2');
    assert.equal(await whoami('v6', '2001:db8:2::2'), '2001:db8:3::2');
    // No IPv4 on the IPv6-only host.
    assert.equal(await whoami('v6', '11.1.0.2'), 'ENETUNREACH');
  });

  it('LAN hosts reach the internet from their router’s address, and each other directly', async () => {
    assert.deepEqual([tb.host('l1').v4, tb.host('l2').v4, tb.host('l1').publicV4], ['192.168.1.2', '192.168.1.3', HOME]);
    assert.equal(await whoami('l1', '11.1.0.2'), HOME);
    assert.equal(await whoami('l2', '11.2.0.2'), HOME);
    assert.equal(await whoami('s1', '11.1.0.2'), OFFICE);
    assert.equal(await whoami('l1', '192.168.1.3'), '192.168.1.2');
    // Not reachable from the internet without a mapping.
    assert.notEqual(await whoami('v4', HOME, 7000, 800), '11.1.0.2');
  });

  it('a static forward reaches its LAN host, from the internet and from the LAN (hairpin, from the public address)', async () => {
    assert.equal(await whoami('v4', OFFICE, 8080), '11.1.0.2');
    assert.equal(await whoami('s2', OFFICE, 8080), OFFICE);
  });

  it('miniupnpd maps a port for a LAN host (the node plugin’s UPnP client)', async () => {
    const home = tb.router('home');
    assert.equal(home.igdUrl, 'http://192.168.1.1:5000/rootDesc.xml');
    // The compiled client (dist/, built before the tests), run on l1 as a node would.
    const script = `import { createUpnp } from ${JSON.stringify(path.join(REPO_ROOT, 'dist/plugins/node/upnp.js'))};
      const u = createUpnp({ enabled: true, gatewayUrl: ${JSON.stringify(home.igdUrl)}, searchTimeoutMs: 3000, requestTimeoutMs: 10000, leaseSeconds: 0, refreshMinutes: 1, maxListed: 100 });
      await u.map(7000, ['TCP'], 'testbed');
      console.log(await u.publicIp());`;
    const p = tb.host('l1').spawn([process.execPath, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.child.stdout!.on('data', (d) => (out += d));
    await p.exited;
    assert.equal(p.child.exitCode, 0);
    assert.equal(out.trim(), HOME, 'the gateway’s public address');
    assert.match(home.exec(['nft', 'list', 'chain', 'inet', 'filter', 'prerouting_miniupnpd']), /dport 7000 dnat ip to 192\.168\.1\.2:7000/);
    assert.equal(await whoami('v4', HOME), '11.1.0.2');
    assert.equal(await whoami('dual', HOME), '11.2.0.2');
  });

  it('cut drops everything of a host until healed; a link taken down comes back with its routes', async () => {
    tb.cut('dual');
    assert.deepEqual(await Promise.all([whoami('v4', '11.2.0.2', 7000, 500), whoami('v6', '2001:db8:2::2', 7000, 500), whoami('dual', '11.1.0.2', 7000, 500), whoami('v4', HOME)]), [
      'ETIMEDOUT',
      'ETIMEDOUT',
      'ETIMEDOUT',
      '11.1.0.2', // the others are not cut
    ]);
    tb.heal('dual');
    assert.deepEqual(await Promise.all([whoami('v4', '11.2.0.2'), whoami('dual', '2001:db8:3::2')]), ['11.1.0.2', '2001:db8:2::2']);

    tb.cut('l2', { how: 'down' });
    assert.equal(await whoami('l2', '11.1.0.2', 7000, 500), 'ENETUNREACH');
    tb.heal('l2');
    assert.equal(await whoami('l2', '11.1.0.2'), HOME);
    tb.cut('home');
    // The LAN still works.
    assert.deepEqual(await Promise.all([whoami('l1', '11.1.0.2', 7000, 500), whoami('l1', '192.168.1.3')]), ['ETIMEDOUT', '192.168.1.2']);
    tb.heal('home');
    assert.equal(await whoami('l1', '11.1.0.2'), HOME);
  });

  it('cutBetween cuts two hosts from each other only, both ways; a host sharing its router’s address is cut by its ports', async () => {
    tb.cutBetween('v4', 'dual');
    assert.deepEqual(await Promise.all([whoami('v4', '11.2.0.2', 7000, 500), whoami('dual', '11.1.0.2', 7000, 500), whoami('dual', '2001:db8:3::2'), whoami('v4', OFFICE, 8080)]), [
      'ETIMEDOUT',
      'ETIMEDOUT',
      '2001:db8:2::2',
      '11.1.0.2',
    ]);
    tb.healBetween('v4', 'dual');
    assert.equal(await whoami('v4', '11.2.0.2'), '11.1.0.2');

    // l1 shares home's address with l2: without its ports it cannot be cut alone.
    assert.throws(() => tb.cutBetween('v4', 'l1'), /shares 11\.201\.0\.2 with its LAN neighbours/);
    tb.host('l1').ports = [7000];
    tb.cutBetween('v4', 'l1');
    assert.deepEqual(await Promise.all([whoami('v4', HOME, 7000, 500), whoami('l1', '11.1.0.2', 7000, 500), whoami('l2', '11.1.0.2'), whoami('dual', HOME)]), [
      'ETIMEDOUT',
      'ETIMEDOUT',
      HOME, // its neighbour still reaches v4
      '11.2.0.2', // others still reach l1
    ]);
    tb.healBetween('v4', 'l1');
    assert.equal(await whoami('v4', HOME), '11.1.0.2');
  });

  it('loss drops that fraction of what crosses the internet, to and from the hosts named', async () => {
    tb.loss(0.5);
    // Each datagram and its echo cross the bridge once each: (1 - 0.5)^2 of 100 come back, 25 on average
    // (5 standard deviations from 25 either way stay inside 3..47).
    const lossy = await udpReplies('v4', '11.2.0.2', 100);
    assert.ok(lossy >= 3 && lossy <= 47, `${lossy} of 100 echoed`);
    tb.loss(0.5, ['dual']);
    const [toDual, fromLan] = await Promise.all([udpReplies('v4', '11.2.0.2', 100), udpReplies('l1', '11.1.0.2', 100)]);
    assert.ok(toDual >= 3 && toDual <= 47, `${toDual} of 100 echoed`);
    assert.equal(fromLan, 100, 'neither end is lossy');
    tb.noLoss();
    assert.equal(await udpReplies('v4', '11.2.0.2', 100), 100);
  });

  it('leaves nothing after stop(): no namespace, process or file', async () => {
    const prefix = tb.prefix;
    assert.ok(leftovers(prefix).length > 0);
    await tb.destroy();
    assert.deepEqual(leftovers(prefix), []);
  });

  describe('a testbed whose process ends without its stop', () => {
    const child = async (mode: 'throw' | 'wait') => {
      const c = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'test/testbed/fixtures/net-child.ts'), mode], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      const exited = new Promise<number | null>((r) => c.once('exit', (code) => r(code)));
      const prefix = await new Promise<string>((resolve, reject) => {
        let out = '';
        c.stdout!.on('data', (d) => {
          out += d;
          const m = /prefix ([a-z]+[0-9a-f]{6})/.exec(out);
          if (m && PREFIX_RE.test(m[1])) resolve(m[1]);
        });
        c.once('exit', (code) => reject(new Error(`the child exited (${code}) before its network was up`)));
      });
      return { c, prefix, exited };
    };

    it('after an uncaught exception, after Ctrl-C (SIGINT), after a SIGKILL once sweepStale() ran', async () => {
      const [thrower, interrupted, killed] = await Promise.all([child('throw'), child('wait'), child('wait')]);
      assert.equal(await thrower.exited, 1);
      assert.deepEqual(leftovers(thrower.prefix), []);

      assert.ok(leftovers(interrupted.prefix).some((l) => l.startsWith('process')));
      interrupted.c.kill('SIGINT');
      assert.equal(await interrupted.exited, 130);
      assert.deepEqual(leftovers(interrupted.prefix), []);

      // A testbed whose owner runs is not stale.
      assert.ok(!sweepStale().includes(killed.prefix));
      killed.c.kill('SIGKILL');
      await killed.exited;
      assert.ok(leftovers(killed.prefix).length > 0, 'its processes outlive it');
      assert.ok(sweepStale().includes(killed.prefix));
      assert.deepEqual(leftovers(killed.prefix), []);
    });
  });
});
