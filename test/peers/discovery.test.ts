/**
 * Finding peers without seeds, on the protocol core (in-memory transport, virtual time): dialling the node
 * list's nodes, links spread over address groups, nodes sharing one public IP each dialled at its own port,
 * IPv6 addresses, dial-backs while incoming links are short, refusals not retried in a loop, and the
 * membership rule for a link whose family differs from the listed address; a plain link replaced by a TLS
 * one.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { generateKeys } from '../../plugins/peers/protocol/keys.ts';
import { MemoryNetwork, VirtualTime } from '../../plugins/peers/protocol/memory.ts';
import { PeerNode, REPLACED, type Admission } from '../../plugins/peers/protocol/node.ts';
import type { Link, Transport } from '../../plugins/peers/protocol/transport.ts';
import { listedFor, Membership } from '../../plugins/peers/membership.ts';
import { nodeSigner } from '../../lib/nodelist/signature.ts';
import { formatAddr, groupOf } from '../../lib/net-addr/addr.ts';
import type { DaemonService } from '../../plugins/daemon/api.ts';
import type { ProtocolConfig } from '../../plugins/peers/protocol/config.ts';

/** Nodes made by the current test, stopped after it (stop() closes their links, so tests read them first). */
const made: PeerNode[] = [];

function world() {
  const sched = new VirtualTime();
  const net = new MemoryNetwork(sched, () => 10);
  const make = (ip: string, port = 16127, cfg: Partial<ProtocolConfig> = {}, env: { admission?: Admission; askDialBack?: (a: string) => void } = {}) => {
    const node = new PeerNode(generateKeys(), net.transport(ip), { ip, port, seeds: [], maintainMs: 1000, ...cfg }, { now: () => sched.now(), setTimer: (fn, ms) => sched.at(ms, fn), ...env });
    net.listen(ip, port, (l) => node.accept(l));
    made.push(node);
    return { node, ip, port, addr: formatAddr(ip, port) };
  };
  const settle = async (ms = 1000) => {
    // Small steps: admission checks are promises, settled between the scheduler's events.
    for (let i = 0; i < 100; i++) await sched.run(sched.now() + ms / 100);
  };
  return { sched, net, make, settle };
}

describe('peer discovery (in-memory transport, virtual time)', () => {
  afterEach(() => {
    for (const n of made.splice(0)) n.stop();
  });

  it('with no seeds, dials the nodes of the list and spreads its links over address groups', async () => {
    const { make, settle } = world();
    // One /16 holds 10 nodes (an operator or attacker with one range); 5 other groups hold one each.
    const crowd = Array.from({ length: 10 }, (_, i) => make(`11.1.0.${i + 2}`));
    const others = [2, 3, 4, 5, 6].map((g) => make(`11.${g}.0.2`));
    const me = make('11.9.0.2', 16127, { maxOutgoing: 8 });
    me.node.setListed([...crowd, ...others].map((n) => n.addr));
    me.node.start();
    await settle(3000);
    const groups = me.node.outgoing().map((c) => groupOf(c.ip));
    assert.equal(groups.length, 8);
    // Every other group first, then the crowded range for what is left: 5 groups + 3 links into 11.1.
    assert.equal(new Set(groups).size, 6);
    assert.equal(groups.filter((g) => g === '11.1').length, 3);
  });

  it('nodes sharing one public IP are each dialled at their own API port', async () => {
    const { make, settle } = world();
    const shared = [16127, 16137, 16147].map((p) => make('11.5.0.2', p));
    const me = make('11.9.0.2', 16127, { maxOutgoing: 8 });
    me.node.setListed(shared.map((n) => n.addr));
    me.node.start();
    await settle(3000);
    assert.deepEqual(me.node.outgoing().map((c) => c.addr).sort(), ['11.5.0.2:16127', '11.5.0.2:16137', '11.5.0.2:16147']);
    for (const s of shared) assert.deepEqual(s.node.incoming().map((c) => c.addr), ['11.9.0.2:16127']);
  });

  it('links over IPv6 addresses, written [v6]:port', async () => {
    const { make, settle } = world();
    const a = make('2001:db8:1::2');
    const b = make('2001:db8:2::2');
    a.node.setListed([b.addr, '[2001:DB8:3:0::2]:16127']);
    assert.ok(a.node.known.has('[2001:db8:3::2]:16127'), 'canonical form');
    a.node.start();
    await settle(2000);
    assert.deepEqual(a.node.outgoing().map((c) => c.addr), ['[2001:db8:2::2]:16127']);
    assert.deepEqual(b.node.incoming().map((c) => c.addr), ['[2001:db8:1::2]:16127']);
  });

  it('asks for dial-backs while short of incoming links, then stops asking', async () => {
    const { make, settle } = world();
    const peers = [2, 3, 4].map((g) => make(`11.${g}.0.2`));
    const asked: string[] = [];
    const me = make('11.9.0.2', 16127, { maxOutgoing: 0, dialBackMs: 5000, minimums: { outgoing: 0, uniqueOutgoingIps: 0, incoming: 2, uniqueIncomingIps: 0 } }, {
      // What the plugin's /core/addoutgoingpeer call makes the asked node do.
      askDialBack: (addr) => {
        asked.push(addr);
        void peers.find((p) => p.addr === addr)!.node.connect(me.addr, 'dialback');
      },
    });
    me.node.setListed(peers.map((p) => p.addr));
    me.node.start();
    await settle(20_000);
    assert.equal(me.node.incoming().length, 2);
    assert.equal(asked.length, 2, `asked ${asked}`);
  });

  it('a node refused by its peer is not dialled again before refusedRetryMs, unless the list newly lists it', async () => {
    const { make, settle, sched } = world();
    const secret = () => crypto.randomBytes(32).toString('hex');
    const [ka, kb] = [secret(), secret()];
    let list: { ip: string; pubkey: string }[] = [{ ip: '11.2.0.2', pubkey: nodeSigner(kb).pubKey }];
    const daemon = { call: async () => list } as unknown as DaemonService;
    const log = { warn() {}, info() {}, debug() {}, error() {} } as any;
    const member = (k: string) => new Membership({ mode: 'nodelist', daemon: () => daemon, secret: () => k, cacheMs: 0, missRefreshMs: 0, log });
    const b = make('11.2.0.2', 16127, {}, { admission: member(kb) });
    // a is not listed: b refuses it.
    const a = make('11.1.0.2', 16127, { backoffBaseMs: 100, backoffMaxMs: 1000, refusedRetryMs: 300_000 }, { admission: member(ka) });
    a.node.setListed([b.addr]);
    a.node.start();
    await settle(60_000);
    const refusals = b.node.history.filter((e) => e.event === "refused").length;
    assert.equal(refusals, 1, 'one try in a minute');
    assert.ok(a.node.known.get(b.addr)!.nextTry - sched.now() > 200_000);
    // Listed now (a's own read of the list shows b anew after a's key was added): tried at once.
    list = [...list, { ip: '11.1.0.2', pubkey: nodeSigner(ka).pubKey }];
    a.node.setListed([]);
    a.node.setListed([b.addr]);
    await settle(3000);
    assert.equal(a.node.outgoing().length, 1);
  });

  it('a key listed only at an address of the other family is admitted on its proof; one of the same family is bound to its IP', () => {
    const k = '03' + 'ab'.repeat(32);
    const v4 = [{ ip: '11.1.0.2:16127', pubkey: k }];
    assert.equal(listedFor(v4, k, '11.1.0.2'), true);
    assert.equal(listedFor(v4, k, '11.7.0.2'), false, 'another IPv4: refused');
    assert.equal(listedFor(v4, k, '2001:db8:1::2'), true, 'a dual-stack node reaching an IPv6 node');
    const v6 = [{ ip: '[2001:db8:4::2]:16127', pubkey: k }];
    assert.equal(listedFor(v6, k, '2001:db8:4:0::2'), true);
    assert.equal(listedFor(v6, k, '2001:db8:5::2'), false);
    assert.equal(listedFor(v6, k, '11.1.0.2'), true);
    assert.equal(listedFor([], k, '11.1.0.2'), false);
  });
});

describe('a plain link replaced by a TLS link (in-memory transport, virtual time)', () => {
  it('the dialler opens a TLS link once the hello named the HTTPS port, then closes the plain one with 4013, counted by neither side', async () => {
    const sched = new VirtualTime();
    const net = new MemoryNetwork(sched, () => 10);
    /** A link as the websocket transport gives it over TLS. */
    const secure = (l: Link): Link => ({
      remoteIp: l.remoteIp,
      secure: true,
      send: (d) => l.send(d),
      buffered: () => l.buffered(),
      close: (c, r) => l.close(c, r),
      abort: () => l.abort(),
      onMessage: (fn) => l.onMessage(fn),
      onClose: (fn) => l.onClose(fn),
    });
    /** The memory transport with what ws-transport adds: TLS at the HTTPS port a hello named. */
    const transport = (from: string): Transport => {
      const tlsPorts = new Map<string, number>();
      const plain = net.transport(from);
      return {
        connect: async (ip, port) => {
          const tls = tlsPorts.get(`${ip}:${port}`);
          return tls ? secure(await plain.connect(ip, tls)) : plain.connect(ip, port);
        },
        offered: (ip, port, tls) => void (tls && tlsPorts.set(`${ip}:${port}`, tls)),
      };
    };
    const env = { now: () => sched.now(), setTimer: (fn: () => void, ms: number) => sched.at(ms, fn) };
    const a = new PeerNode(generateKeys(), transport('11.1.0.2'), { ip: '11.1.0.2', port: 16127, seeds: [] }, env);
    const b = new PeerNode(generateKeys(), transport('11.2.0.2'), { ip: '11.2.0.2', port: 16127, tlsPort: 16128, seeds: [] }, env);
    made.push(a, b);
    net.listen('11.1.0.2', 16127, (l) => a.accept(l));
    net.listen('11.2.0.2', 16127, (l) => b.accept(l));
    net.listen('11.2.0.2', 16128, (l) => b.accept(secure(l)));
    await a.connect('11.2.0.2:16127');
    for (let i = 0; i < 50; i++) await sched.run(sched.now() + 20);
    assert.deepEqual(a.outgoing().map((c) => [c.addr, !!c.link.secure]), [['11.2.0.2:16127', true]]);
    assert.deepEqual(b.incoming().map((c) => [c.addr, !!c.link.secure]), [['11.1.0.2:16127', true]]);
    for (const n of [a, b]) {
      assert.ok(n.history.some((e) => e.code === REPLACED && e.reason === 'replaced by a TLS link'), JSON.stringify(n.history));
      assert.deepEqual(n.unstable(), []);
    }
    // The replaced link set no back-off: the address is as good as ever.
    assert.equal(a.known.get('11.2.0.2:16127')?.failures ?? 0, 0);
  });
});
