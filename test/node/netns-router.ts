/**
 * A home network in network namespaces for the UPnP tests (the machine's own network is never touched):
 * `<p>-r` is the router (miniupnpd, the real IGD, with nftables NAT), `<p>-w` the internet side at
 * 11.77.0.2 (the router's public address is 11.77.0.1: miniupnpd refuses reserved and private addresses as
 * its external one, and this one is routed nowhere but inside these namespaces), `<p>-l` the LAN where the
 * node runs at 192.168.77.2. All names start with `h16` (or the caller's `prefix`); `destroy()` removes
 * everything, also after a failed set-up.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const WAN_IP = '11.77.0.1';
export const LAN_GW = '192.168.77.1';
export const LAN_NODE = '192.168.77.2';

const RULES = `table inet filter {
  chain forward { type filter hook forward priority 0; policy drop; ct state established,related accept; jump miniupnpd; }
  chain miniupnpd { }
  chain prerouting { type nat hook prerouting priority -100; policy accept; jump prerouting_miniupnpd; }
  chain postrouting { type nat hook postrouting priority 100; policy accept; jump postrouting_miniupnpd; oifname "wan0" masquerade; }
  chain prerouting_miniupnpd { }
  chain postrouting_miniupnpd { }
}
`;

export interface HomeNetwork {
  router: string;
  wan: string;
  lan: string;
  dir: string;
  /** nsenter argv prefix for a namespace. */
  inNs(ns: string): string[];
  exec(ns: string, args: string[]): string;
  startIgd(): Promise<void>;
  stopIgd(): Promise<void>;
  destroy(): Promise<void>;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe', encoding: 'utf8' });

export function canBuildHomeNetwork(): boolean {
  try {
    execFileSync('miniupnpd', ['--version'], { stdio: 'ignore' });
    execFileSync('nft', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function createHomeNetwork(o: { prefix?: string } = {}): Promise<HomeNetwork> {
  const p = `${o.prefix ?? 'h16'}-${randomBytes(3).toString('hex')}`;
  const [router, wan, lan] = [`${p}-r`, `${p}-w`, `${p}-l`];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'h16-igd-'));
  let igd: ChildProcess | undefined;
  const inNs = (ns: string) => ['nsenter', `--net=/run/netns/${ns}`, '--'];
  const exec = (ns: string, args: string[]) => execFileSync(inNs(ns)[0], [...inNs(ns).slice(1), ...args], { stdio: 'pipe', encoding: 'utf8' });
  const net: HomeNetwork = {
    router,
    wan,
    lan,
    dir,
    inNs,
    exec,
    async startIgd() {
      if (igd && igd.exitCode === null) return;
      const log = fs.openSync(path.join(dir, 'miniupnpd.log'), 'a');
      igd = spawn(inNs(router)[0], [...inNs(router).slice(1), 'miniupnpd', '-f', path.join(dir, 'miniupnpd.conf'), '-d', '-P', path.join(dir, 'miniupnpd.pid')], { stdio: ['ignore', log, log] });
      fs.closeSync(log);
      // Up once its SSDP and HTTP sockets are open (it logs the HTTP port).
      const end = Date.now() + 15_000;
      while (!/HTTP listening on port/.test(fs.readFileSync(path.join(dir, 'miniupnpd.log'), 'utf8').split('starting UPnP-IGD').pop() ?? '')) {
        if (igd.exitCode !== null || Date.now() > end) throw new Error(`miniupnpd did not start: ${fs.readFileSync(path.join(dir, 'miniupnpd.log'), 'utf8').slice(-500)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stopIgd() {
      const child = igd;
      igd = undefined;
      if (!child || child.exitCode !== null) return;
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(t);
    },
    async destroy() {
      await net.stopIgd();
      for (const ns of [lan, wan, router])
        try {
          ip('netns', 'delete', ns);
        } catch {
          /* not created */
        }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    for (const ns of [router, wan, lan]) ip('netns', 'add', ns);
    // Each veth is created inside the namespaces (never in the machine's own).
    ip('link', 'add', 'wan0', 'netns', router, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', wan);
    ip('link', 'add', 'lan0', 'netns', router, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', lan);
    ip('-n', router, 'addr', 'add', `${WAN_IP}/24`, 'dev', 'wan0');
    ip('-n', router, 'addr', 'add', `${LAN_GW}/24`, 'dev', 'lan0');
    ip('-n', wan, 'addr', 'add', '11.77.0.2/24', 'dev', 'eth0');
    ip('-n', lan, 'addr', 'add', `${LAN_NODE}/24`, 'dev', 'eth0');
    for (const [ns, dev] of [[router, 'wan0'], [router, 'lan0'], [wan, 'eth0'], [lan, 'eth0'], [router, 'lo'], [wan, 'lo'], [lan, 'lo']]) ip('-n', ns, 'link', 'set', dev, 'up');
    ip('-n', lan, 'route', 'add', 'default', 'via', LAN_GW);
    exec(router, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    execFileSync(inNs(router)[0], [...inNs(router).slice(1), 'nft', '-f', '-'], { input: RULES, stdio: ['pipe', 'pipe', 'pipe'] });
    fs.writeFileSync(
      path.join(dir, 'miniupnpd.conf'),
      [
        'ext_ifname=wan0',
        'listening_ip=lan0',
        'port=0',
        'enable_natpmp=no',
        'enable_upnp=yes',
        'secure_mode=yes',
        'notify_interval=60',
        'clean_ruleset_interval=0',
        `uuid=${crypto.randomUUID()}`,
        'allow 1024-65535 192.168.77.0/24 1024-65535',
        'deny 0-65535 0.0.0.0/0 0-65535',
        '',
      ].join('\n'),
    );
    await net.startIgd();
    return net;
  } catch (e) {
    await net.destroy();
    throw e;
  }
}
