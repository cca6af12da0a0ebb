/**
 * Real node processes on the testbed (test/support/testbed): node `a` and node `b` on public hosts, node
 * `c` behind router `home`, which runs miniupnpd (the node maps its own ports through it). All three are in
 * the node list the chain's double answers, at their public `IP:PORT`, with membership `nodelist`; `b` and
 * `c` are seeded with `a` (`peers.seeds`, dialled over ws://). `b` runs under faketime, 5 minutes ahead.
 * Node `d`, on an IPv6-only host, serves HTTPS with the testbed's certificate and is listed at
 * `[v6]:PORT`; it has no seed (the peers config takes IPv4 seeds only) and links to nobody.
 */
import assert from 'node:assert/strict';
import { Testbed, QUICK_PEERS, leftovers } from '../support/testbed/index.ts';
import { eventually } from '../support/wait.ts';

const SKEW_S = 300;
const data = (a: { json?: any; status: number; text: string }) => {
  if (a.json?.status !== 'success') throw new Error(`not a success: ${a.status} ${a.text.slice(0, 300)}`);
  return a.json.data;
};

describe('testbed: real node processes', function () {
  this.timeout(90_000);
  let tb: Testbed;
  const links = async (name: string) => {
    const n = tb.node(name);
    return { out: data(await n.get('/core/connectedpeers')) as string[], in: data(await n.get('/core/incomingconnections')) as string[] };
  };

  before(async () => {
    tb = await Testbed.start({
      hosts: [{ name: 'a' }, { name: 'b', node: { clockOffsetSeconds: SKEW_S } }, { name: 'c', behind: 'home' }, { name: 'd', ip: 'v6', node: { tls: true } }],
      routers: [{ name: 'home', upnp: true }],
      seeds: ['a'],
      config: { peers: { ...QUICK_PEERS, minimums: { outgoing: 2, uniqueOutgoingIps: 2, incoming: 1, uniqueIncomingIps: 1 } } },
    });
  });

  after(async () => {
    const prefix = tb?.net.prefix;
    await tb?.stop();
    if (prefix) assert.deepEqual(leftovers(prefix), []);
  });

  it('lists each node at its public address and links all three, the NATed one through its UPnP mapping', async () => {
    assert.deepEqual(
      tb.chain.nodeList.map((e) => [e.ip, e.pubkey, e.tier]),
      [
        ['11.1.0.2:16127', tb.node('a').nodeKey.pubKey, 'CUMULUS'],
        ['11.2.0.2:16127', tb.node('b').nodeKey.pubKey, 'CUMULUS'],
        ['11.201.0.2:16127', tb.node('c').nodeKey.pubKey, 'CUMULUS'],
        ['[2001:db8:4::2]:16127', tb.node('d').nodeKey.pubKey, 'CUMULUS'],
      ],
    );
    const ips = { a: '11.1.0.2', b: '11.2.0.2', c: '11.201.0.2' } as const;
    await eventually(
      async () => {
        for (const name of ['a', 'b', 'c'] as const) {
          const l = await links(name);
          const others = Object.entries(ips).filter(([k]) => k !== name).map(([, ip]) => ip);
          if (!others.every((ip) => l.out.includes(ip))) return false;
        }
        // c accepted links: a and b reached it through the router's mapping.
        return (await links('c')).in.length > 0;
      },
      { what: 'every node linked out to both others, and c linked to', everyMs: 300, timeoutMs: 60_000 },
    );
    // Each peer proved the key the list shows at its address.
    const peers = data(await tb.node('a').get('/core/peers')) as { ip: string; listedKey: string }[];
    assert.deepEqual(new Set(peers.map((p) => `${p.ip} ${p.listedKey}`)), new Set([`${ips.b} ${tb.node('b').nodeKey.pubKey}`, `${ips.c} ${tb.node('c').nodeKey.pubKey}`]));
    assert.equal(data(await tb.node('a').get('/core/checkcommunication')), 'Communication to Core network is properly established');
  });

  it('an IPv6-only node serves HTTPS with the testbed’s certificate, reached from the runner', async () => {
    const d = tb.node('d');
    assert.match(d.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(data(await d.get('/core/version')), data(await tb.node('a').get('/core/version')));
    assert.equal(d.config.peers && (d.config.peers as { seeds?: string[] }).seeds, undefined);
    // A client without the testbed's certificate refuses it.
    await assert.rejects(fetch(`${d.url}/core/version`), /fetch failed/);
  });

  it('a node under faketime is 5 minutes ahead in its hello', async () => {
    const offsets = (data(await tb.node('a').get('/core/peers')) as { ip: string; remoteClockOffsetMs: number }[]).filter((p) => p.ip === '11.2.0.2').map((p) => p.remoteClockOffsetMs);
    assert.ok(offsets.length > 0);
    for (const o of offsets) assert.ok(Math.abs(o + SKEW_S * 1000) < 30_000, `offset ${o} ms`);
  });

  it('a node killed with SIGKILL and started again on its data rejoins with its key', async () => {
    const b = tb.node('b');
    const keyOf = async () => (data(await tb.node('a').get('/core/peers')) as { ip: string; nodeKey: string }[]).find((p) => p.ip === '11.2.0.2')?.nodeKey;
    const before = await keyOf();
    assert.ok(before);
    const pid = b.pid;
    await b.kill();
    assert.equal(b.running(), false);
    assert.throws(() => process.kill(pid!, 0), /ESRCH/);
    await eventually(async () => !(await links('a')).out.includes('11.2.0.2') && !(await links('a')).in.includes('11.2.0.2'), { what: 'b gone from a', everyMs: 300 });
    await b.start();
    await eventually(async () => (await keyOf()) === before && (await links('b')).out.length === 2, { what: 'b back, linked to both', everyMs: 300 });
  });
});
