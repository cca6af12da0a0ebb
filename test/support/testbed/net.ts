/**
 * The testbed's network: hosts are network namespaces on a shared "internet", some behind NAT routers.
 *
 * - The internet is a bridge `br0` in a namespace of its own (`<prefix>-net`), holding 11.0.0.1/8 and
 *   2001:db8::1/32 (the hosts' default gateway; it forwards nothing further).
 * - A public host (`<prefix>-h<i>`) has a veth `eth0` to the bridge with 11.<i>.0.2/8 and/or
 *   2001:db8:<i>::2/32: one /8 segment, every host in a /16 of its own (the peer network tells hosts
 *   apart by address). 11/8 is public space, routed nowhere but inside these namespaces: miniupnpd refuses
 *   a private or reserved external address (test/node/netns-router.ts).
 * - A router (`<prefix>-r<j>`) has 11.<200+j>.0.2 (and 2001:db8:<200+j>::2 when `v6`) on the internet and a
 *   LAN bridge `lan0` with 192.168.<j>.1/24 (fd00:<j>::1/64) to its hosts at 192.168.<j>.<n+1>; nftables
 *   masquerades what leaves, forwards `forwards` (DNAT, also from its own LAN: hairpin, with the source
 *   rewritten to the public address so the LAN host sees what an internet host would), and runs Debian's
 *   miniupnpd when `upnp` (its description at http://192.168.<j>.1:5000/rootDesc.xml).
 * Devices are made inside the namespaces (`ip link add ... netns`), never in the runner's: nothing here
 * touches the machine's own interfaces, routes or rules, nor any `docker0`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { SpawnOptions } from 'node:child_process';
import { atExit } from '../at-exit.ts';
import { newPrefix, removeTestbed, testbedDir } from './names.ts';
import { execIn, ip, lineOf, spawnIn, type NsProcess } from './procs.ts';
import { Controls } from './controls.ts';

export const FORWARD_SCRIPT = path.join(path.dirname(new URL(import.meta.url).pathname), 'forward.mjs');

/** The internet's own addresses (the bridge): every host's default gateway. */
export const INTERNET_V4 = '11.0.0.1';
export const INTERNET_V6 = '2001:db8::1';
export const IGD_PORT = 5000;

export interface HostSpec {
  name: string;
  /** Its addresses: IPv4 (default), IPv6, or both. A LAN host gets its router's families. */
  ip?: 'v4' | 'v6' | 'dual';
  /** The router it sits behind (by name): a LAN host. */
  behind?: string;
}

export interface PortForward {
  /** The router's public port. */
  port: number;
  /** The LAN host (by name) and its port (default the same). */
  to: string;
  toPort?: number;
  proto?: 'tcp' | 'udp';
}

export interface RouterSpec {
  name: string;
  /** An IPv6 address too (its LAN hosts reach the v6 internet through NAT66). */
  v6?: boolean;
  /** Run miniupnpd for the LAN. */
  upnp?: boolean;
  forwards?: PortForward[];
}

export interface NetSpec {
  hosts: HostSpec[];
  routers?: RouterSpec[];
}

interface Place {
  name: string;
  ns: string;
  /** Its folder (sockets, logs, configs). */
  dir: string;
  /** Run a command in its namespace and wait for it. */
  exec(args: string[], opts?: { input?: string }): string;
  /** Start a process in its namespace (stopped by `destroy()` at the latest). */
  spawn(args: string[], opts?: SpawnOptions): NsProcess;
}

export interface NetRouter extends Place {
  kind: 'router';
  v4: string;
  v6?: string;
  lanV4: string;
  lanV6?: string;
  /** miniupnpd's root description, when it runs. */
  igdUrl?: string;
  hosts: NetHost[];
}

export interface NetHost extends Place {
  kind: 'host';
  /** Its own addresses (private ones for a LAN host). */
  v4?: string;
  v6?: string;
  /** How the internet reaches it: its own addresses, or its router's. */
  publicV4?: string;
  publicV6?: string;
  router?: NetRouter;
  /**
   * The ports it serves, set by whoever starts its server (the node layer: the API port). `cutBetween` cuts
   * a host that shares its public address with others by these.
   */
  ports: number[];
}

export interface TestNet {
  prefix: string;
  dir: string;
  internetNs: string;
  /** The internet's namespace as a place (a service every host reaches by a socket file may run there). */
  internet: Place;
  hosts: NetHost[];
  routers: NetRouter[];
  host(name: string): NetHost;
  router(name: string): NetRouter;
  /** A place by name (host or router). */
  place(name: string): NetHost | NetRouter;
  /**
   * Start `forward.mjs` in a place's namespace (pairs of listen/connect addresses, `--delay` first when
   * given); resolves once it listens, with the addresses it bound.
   */
  forward(where: Place | string, pairs: string[], opts?: { delayMs?: number }): Promise<{ proc: NsProcess; bound: string[] }>;
  /** Cut a host (or router) off the network: nft drops everything on its `eth0` (`how: 'drop'`), or the link goes down. */
  cut(name: string, opts?: { how?: 'drop' | 'down' }): void;
  heal(name: string): void;
  /** Cut only the traffic between two hosts, both ways. */
  cutBetween(a: string, b: string): void;
  healBetween(a: string, b: string): void;
  /** Drop `fraction` of the packets crossing the internet (to or from `hosts`, default every one). */
  loss(fraction: number, hosts?: string[]): void;
  noLoss(): void;
  destroy(): Promise<void>;
}

const ROUTER_RULES = (r: { v4: string; lan: string; forwards: { proto: string; port: number; to: string; toPort: number }[] }) => `table inet filter {
  chain forward { type filter hook forward priority 0; policy drop; ct state established,related accept; iifname "lan0" accept; ct status dnat accept; jump miniupnpd; }
  chain miniupnpd { }
  chain prerouting {
    type nat hook prerouting priority -100; policy accept;
${r.forwards.map((f) => `    ip daddr ${r.v4} ${f.proto} dport ${f.port} dnat ip to ${f.to}:${f.toPort}`).join('\n')}
    jump prerouting_miniupnpd;
  }
  chain postrouting {
    type nat hook postrouting priority 100; policy accept;
    jump postrouting_miniupnpd;
    oifname "lan0" ip saddr ${r.lan} ct status dnat snat ip to ${r.v4};
    oifname "eth0" masquerade;
  }
  chain prerouting_miniupnpd { }
  chain postrouting_miniupnpd { }
}
`;

/** Build the network; `prefix` chosen by the caller (`newPrefix()`) when it needs the folder's name first. */
export async function createNet(spec: NetSpec, prefix = newPrefix()): Promise<TestNet> {
  const dir = testbedDir(prefix);
  // The folder and its owner first: a namespace of this prefix without them is a leftover (names.ts).
  fs.mkdirSync(dir, { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'owner'), String(process.pid));
  // However this process ends short of SIGKILL, nothing of the testbed stays.
  const forget = atExit(() => removeTestbed(prefix));
  const procs = new Set<NsProcess>();
  const internetNs = `${prefix}-net`;

  function place(name: string, ns: string): Place {
    const pdir = path.join(dir, ns.slice(prefix.length + 1));
    fs.mkdirSync(pdir, { recursive: true });
    return {
      name,
      ns,
      dir: pdir,
      exec: (args, opts) => execIn(ns, args, opts),
      spawn(args, opts) {
        const p = spawnIn(ns, args, opts);
        procs.add(p);
        void p.exited.then(() => procs.delete(p));
        return p;
      },
    };
  }

  const hosts: NetHost[] = [];
  const routers: NetRouter[] = [];
  const byName = new Map<string, NetHost | NetRouter>();
  const igds: NsProcess[] = [];
  let destroyed = false;

  const net: TestNet = {
    prefix,
    dir,
    internetNs,
    internet: place('internet', internetNs),
    hosts,
    routers,
    host(name) {
      const h = byName.get(name);
      if (!h || h.kind !== 'host') throw new Error(`no host ${name}`);
      return h;
    },
    router(name) {
      const r = byName.get(name);
      if (!r || r.kind !== 'router') throw new Error(`no router ${name}`);
      return r;
    },
    place(name) {
      const p = byName.get(name);
      if (!p) throw new Error(`no host or router ${name}`);
      return p;
    },
    async forward(where, pairs, opts = {}) {
      const p = typeof where === 'string' ? net.place(where) : where;
      const proc = p.spawn([process.execPath, FORWARD_SCRIPT, ...(opts.delayMs ? ['--delay', String(opts.delayMs)] : []), ...pairs], { stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      proc.child.stderr!.on('data', (d) => (err += d));
      const line = await lineOf(proc, /^ready/, `forward.mjs in ${p.ns}`).catch((e) => {
        throw new Error(`${(e as Error).message} ${err.slice(-300)}`);
      });
      return { proc, bound: line.split(' ').slice(1) };
    },
    cut: (name, opts) => controls.cut(name, opts?.how ?? 'drop'),
    heal: (name) => controls.heal(name),
    cutBetween: (a, b) => controls.between(a, b, true),
    healBetween: (a, b) => controls.between(a, b, false),
    loss: (fraction, names) => controls.loss(fraction, names),
    noLoss: () => controls.loss(0),
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      await Promise.all([...procs].map((p) => p.stop(5000)));
      forget();
      removeTestbed(prefix);
    },
  };
  const controls = new Controls(net);

  try {
    // The internet.
    ip('netns', 'add', internetNs);
    ip('-n', internetNs, 'link', 'set', 'lo', 'up');
    ip('-n', internetNs, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', internetNs, 'addr', 'add', `${INTERNET_V4}/8`, 'dev', 'br0');
    ip('-n', internetNs, 'addr', 'add', `${INTERNET_V6}/32`, 'dev', 'br0', 'nodad');
    ip('-n', internetNs, 'link', 'set', 'br0', 'up');
    // br_netfilter is loaded on this machine: bridged frames would go through the inet hooks too. The
    // internet's own rules (loss) are in the bridge family; a router's LAN is routed, not filtered, by it.
    execIn(internetNs, ['sysctl', '-qw', 'net.bridge.bridge-nf-call-iptables=0', 'net.bridge.bridge-nf-call-ip6tables=0']);

    /** A namespace with `eth0` on the internet at number k. */
    const attach = (ns: string, port: string, k: number, v4: boolean, v6: boolean) => {
      ip('netns', 'add', ns);
      ip('link', 'add', 'eth0', 'netns', ns, 'type', 'veth', 'peer', 'name', port, 'netns', internetNs);
      ip('-n', internetNs, 'link', 'set', port, 'master', 'br0', 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
      // A link taken down (cut how 'down') keeps its IPv6 addresses, as it keeps IPv4 ones.
      execIn(ns, ['sysctl', '-qw', 'net.ipv6.conf.eth0.keep_addr_on_down=1']);
      const a = { v4: v4 ? `11.${k}.0.2` : undefined, v6: v6 ? `2001:db8:${k.toString(16)}::2` : undefined };
      if (a.v4) ip('-n', ns, 'addr', 'add', `${a.v4}/8`, 'dev', 'eth0');
      if (a.v6) ip('-n', ns, 'addr', 'add', `${a.v6}/32`, 'dev', 'eth0', 'nodad');
      ip('-n', ns, 'link', 'set', 'eth0', 'up');
      if (a.v4) ip('-n', ns, 'route', 'add', 'default', 'via', INTERNET_V4);
      if (a.v6) ip('-n', ns, '-6', 'route', 'add', 'default', 'via', INTERNET_V6);
      return a;
    };

    for (const [j0, rs] of (spec.routers ?? []).entries()) {
      const j = j0 + 1;
      if (byName.has(rs.name)) throw new Error(`two places named ${rs.name}`);
      const p = place(rs.name, `${prefix}-r${j}`);
      const a = attach(p.ns, `r${j}`, 200 + j, true, !!rs.v6);
      const r: NetRouter = { ...p, kind: 'router', v4: a.v4!, v6: a.v6, lanV4: `192.168.${j}.1`, lanV6: rs.v6 ? `fd00:${j}::1` : undefined, hosts: [] };
      ip('-n', r.ns, 'link', 'add', 'lan0', 'type', 'bridge');
      ip('-n', r.ns, 'addr', 'add', `${r.lanV4}/24`, 'dev', 'lan0');
      if (r.lanV6) ip('-n', r.ns, 'addr', 'add', `${r.lanV6}/64`, 'dev', 'lan0', 'nodad');
      ip('-n', r.ns, 'link', 'set', 'lan0', 'up');
      r.exec(['sysctl', '-qw', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1', 'net.bridge.bridge-nf-call-iptables=0', 'net.bridge.bridge-nf-call-ip6tables=0']);
      routers.push(r);
      byName.set(r.name, r);
    }

    for (const [i0, hs] of spec.hosts.entries()) {
      const i = i0 + 1;
      if (byName.has(hs.name)) throw new Error(`two places named ${hs.name}`);
      const p = place(hs.name, `${prefix}-h${i}`);
      let h: NetHost;
      if (!hs.behind) {
        const a = attach(p.ns, `h${i}`, i, hs.ip !== 'v6', hs.ip === 'v6' || hs.ip === 'dual');
        h = { ...p, kind: 'host', v4: a.v4, v6: a.v6, publicV4: a.v4, publicV6: a.v6, ports: [] };
      } else {
        const r = net.router(hs.behind);
        const n = r.hosts.length + 2;
        const j = routers.indexOf(r) + 1;
        ip('netns', 'add', p.ns);
        ip('link', 'add', 'eth0', 'netns', p.ns, 'type', 'veth', 'peer', 'name', `l${n}`, 'netns', r.ns);
        ip('-n', r.ns, 'link', 'set', `l${n}`, 'master', 'lan0', 'up');
        ip('-n', p.ns, 'link', 'set', 'lo', 'up');
        execIn(p.ns, ['sysctl', '-qw', 'net.ipv6.conf.eth0.keep_addr_on_down=1']);
        h = { ...p, kind: 'host', v4: `192.168.${j}.${n}`, v6: r.lanV6 ? `fd00:${j}::${n}` : undefined, publicV4: r.v4, publicV6: r.v6, router: r, ports: [] };
        ip('-n', p.ns, 'addr', 'add', `${h.v4}/24`, 'dev', 'eth0');
        if (h.v6) ip('-n', p.ns, 'addr', 'add', `${h.v6}/64`, 'dev', 'eth0', 'nodad');
        ip('-n', p.ns, 'link', 'set', 'eth0', 'up');
        ip('-n', p.ns, 'route', 'add', 'default', 'via', r.lanV4);
        if (h.v6) ip('-n', p.ns, '-6', 'route', 'add', 'default', 'via', r.lanV6!);
        r.hosts.push(h);
      }
      hosts.push(h);
      byName.set(h.name, h);
    }

    // Routers' rules (their forwards need the LAN hosts' addresses), then their gateways.
    for (const [j0, rs] of (spec.routers ?? []).entries()) {
      const r = routers[j0];
      const forwards = (rs.forwards ?? []).map((f) => {
        const to = net.host(f.to);
        if (to.router !== r) throw new Error(`forward to ${f.to}: not a host behind ${r.name}`);
        return { proto: f.proto ?? 'tcp', port: f.port, to: to.v4!, toPort: f.toPort ?? f.port };
      });
      r.exec(['nft', '-f', '-'], { input: ROUTER_RULES({ v4: r.v4, lan: `192.168.${j0 + 1}.0/24`, forwards }) });
      if (rs.upnp) {
        igds.push(await startIgd(r, j0 + 1));
        r.igdUrl = `http://${r.lanV4}:${IGD_PORT}/rootDesc.xml`;
      }
    }
    return net;
  } catch (e) {
    await net.destroy();
    throw e;
  }
}

/** Debian's miniupnpd for a router's LAN (as test/node/netns-router.ts runs it), up once its HTTP port listens. */
async function startIgd(r: NetRouter, j: number): Promise<NsProcess> {
  const conf = path.join(r.dir, 'miniupnpd.conf');
  const log = path.join(r.dir, 'miniupnpd.log');
  fs.writeFileSync(
    conf,
    [
      'ext_ifname=eth0',
      'listening_ip=lan0',
      // A fixed port in the router's own namespace: a node is given the description's URL (upnp.gatewayUrl).
      `port=${IGD_PORT}`,
      'enable_natpmp=no',
      'enable_upnp=yes',
      'secure_mode=yes',
      'notify_interval=60',
      'clean_ruleset_interval=0',
      `uuid=${randomUUID()}`,
      `allow 1024-65535 192.168.${j}.0/24 1024-65535`,
      'deny 0-65535 0.0.0.0/0 0-65535',
      '',
    ].join('\n'),
  );
  const fd = fs.openSync(log, 'a');
  const p = r.spawn(['miniupnpd', '-f', conf, '-d', '-P', path.join(r.dir, 'miniupnpd.pid')], { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  const end = Date.now() + 15_000;
  while (!/HTTP listening on port/.test(fs.readFileSync(log, 'utf8'))) {
    if (!p.running() || Date.now() > end) throw new Error(`miniupnpd in ${r.ns} did not start: ${fs.readFileSync(log, 'utf8').slice(-500)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
  return p;
}
