/**
 * The testbed: hosts in network namespaces on a shared internet (net.ts), some behind NAT routers, one
 * regtest chain whose node list names the testbed's nodes (chain.ts), and a real node process on each host
 * that asks for one (nodes.ts). `Testbed.start` builds it all; `stop()` removes it all, and so does the
 * process's exit however it ends short of SIGKILL (at-exit.ts); `sweepStale()` the leftovers of a killed
 * runner. See README.md here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../../core/config.ts';
// @ts-expect-error: plain JavaScript without types (it runs before anything is built)
import { buildIfStale } from '../../../scripts/build.mjs';
import { startChain, listEntry, HOST_RPC_PORT, type Chain } from './chain.ts';
import { newWallet, type Wallet } from './keys.ts';
import { createNet, type HostSpec, type NetHost, type RouterSpec, type TestNet } from './net.ts';
import { leftovers, newPrefix, sweepStale, testbedDir } from './names.ts';
import { API_PORT, TestbedNode, type NodeOptions } from './nodes.ts';
import { makeCert, type Cert } from './tls.ts';

export { sweepStale, leftovers };
export type { TestbedNode, NodeOptions, NetHost, TestNet };

export interface TestbedHostSpec extends HostSpec {
  /** The node it runs (default: one with the defaults); `false`: none. */
  node?: NodeOptions | false;
}

export interface TestbedRouterSpec extends Omit<RouterSpec, 'forwards'> {
  /** Static port forwards; `port` defaults to the LAN host's node API port. */
  forwards?: { to: string; port?: number; toPort?: number; proto?: 'tcp' | 'udp' }[];
}

export interface TestbedOptions {
  hosts: TestbedHostSpec[];
  routers?: TestbedRouterSpec[];
  /** Config every node gets (under its own `node.config`); e.g. quick peer timers. */
  config?: Record<string, unknown>;
  /** Nodes (by host name) every other node has as `peers.seeds` (their listed `ip:port`, of the families it has). */
  seeds?: string[];
  /** Start the nodes (default true); else call `node.start()` when the test wants. */
  startNodes?: boolean;
  /** More pairs for each host's forwarder (`listen`, `connect`), e.g. a registry on every host's loopback. */
  hostForwards?: (host: NetHost) => string[];
}

/** Quick timers for small networks (the defaults are for the internet: pings every 30 s, re-dials after a minute). */
export const QUICK_PEERS = {
  maintainMs: 500,
  pingMs: 2000,
  backoffBaseMs: 300,
  backoffMaxMs: 3000,
  handshakeMs: 5000,
  nodeListCacheMs: 2000,
};

export class Testbed {
  readonly nodes: TestbedNode[] = [];
  /** A core-team wallet of the testbed's own (every node's `coreTeam`). */
  readonly coreTeam: Wallet = newWallet();
  cert?: Cert;
  private stopped = false;

  private constructor(
    readonly net: TestNet,
    readonly chain: Chain,
  ) {}

  static async start(o: TestbedOptions): Promise<Testbed> {
    sweepStale();
    buildIfStale();
    // API ports: 16127, and behind a router 16127 + 10n for its n-th host (several nodes on one public IP).
    const behind = new Map<string, number>();
    const ports = new Map<string, number>();
    for (const h of o.hosts) {
      if (h.node === false) continue;
      const n = h.behind ? (behind.get(h.behind) ?? 0) : 0;
      if (h.behind) behind.set(h.behind, n + 1);
      ports.set(h.name, h.node?.port ?? API_PORT + 10 * n);
    }
    const routers = (o.routers ?? []).map((r) => ({
      ...r,
      forwards: (r.forwards ?? []).map((f) => {
        const port = f.port ?? ports.get(f.to);
        if (port === undefined) throw new Error(`forward to ${f.to}: no port and no node there`);
        return { ...f, port, toPort: f.toPort ?? port };
      }),
    }));
    // The network's folder is made before createNet's first await, so the daemon's data can go in it.
    const prefix = newPrefix();
    const netP = createNet({ hosts: o.hosts, routers }, prefix);
    const [netR, chainR] = await Promise.allSettled([netP, startChain(path.join(testbedDir(prefix), 'chain'))]);
    if (netR.status === 'rejected' || chainR.status === 'rejected') {
      if (netR.status === 'fulfilled') await netR.value.destroy();
      if (chainR.status === 'fulfilled') await chainR.value.stop();
      throw netR.status === 'rejected' ? netR.reason : (chainR as PromiseRejectedResult).reason;
    }
    const tb = new Testbed(netR.value, chainR.value);
    try {
      await tb.chain.serveAt(path.join(tb.net.dir, 'chain.sock'));
      await tb.setup(o, ports);
      return tb;
    } catch (e) {
      await tb.stop();
      throw e;
    }
  }

  private async setup(o: TestbedOptions, ports: Map<string, number>) {
    const { net } = this;
    const withNode = o.hosts.filter((h) => h.node !== false);
    if (withNode.some((h) => h.node && h.node.tls))
      this.cert = makeCert(net.dir, net.hosts.flatMap((h) => [h.v4, h.v6, h.publicV4, h.publicV6]).filter((a): a is string => !!a));
    const manifestDirs = new Map<string, string>();
    const manifests = (plugins: string[]) => {
      const set = [...new Set(['host', 'node', ...plugins])].sort();
      const key = set.join(',');
      if (!manifestDirs.has(key)) {
        const dir = path.join(net.dir, `manifests-${manifestDirs.size}`);
        fs.mkdirSync(dir);
        for (const p of set) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${p}.yaml`), path.join(dir, `${p}.yaml`));
        manifestDirs.set(key, dir);
      }
      return manifestDirs.get(key)!;
    };
    for (const h of withNode) {
      const node = new TestbedNode(h.name, net.host(h.name), { ...(h.node || {}), port: ports.get(h.name) }, {
        coreTeam: [this.coreTeam.legacyid],
        chain: this.chain,
        cert: this.cert,
        manifests,
        config: o.config,
      });
      this.nodes.push(node);
    }
    // A seed is dialled at its listed address: a host reaches seeds of its own address families only.
    const seeds = (o.seeds ?? []).map((s) => this.node(s));
    for (const n of this.nodes) {
      const mine = seeds.filter((s) => s !== n && (s.listedAddress.startsWith('[') ? !!n.host.v6 : !!n.host.v4)).map((s) => s.listedAddress);
      if (mine.length) n.config.peers = { ...(n.config.peers as object), seeds: mine };
    }
    this.listNodes();
    // One forwarder per host: its daemon's RPC port to the chain, its node's API socket, and what the caller adds.
    await Promise.all(
      net.hosts.map(async (h) => {
        const node = this.nodes.find((n) => n.host === h);
        const pairs = [`tcp:127.0.0.1:${HOST_RPC_PORT}`, `unix:${this.chain.socketPath}`, ...(node?.forwardPairs() ?? []), ...(o.hostForwards?.(h) ?? [])];
        await net.forward(h, pairs);
      }),
    );
    if (o.startNodes !== false) await Promise.all(this.nodes.map((n) => n.start()));
  }

  /** The node list from the nodes marked listed (call again after changing who is listed). */
  listNodes(filter: (n: TestbedNode) => boolean = (n) => n.listed): void {
    this.chain.nodeList = this.nodes.filter(filter).map((n, i) => listEntry({ pubkey: n.nodeKey.pubKey, ip: n.listedAddress, rank: i + 1 }));
  }

  node(name: string): TestbedNode {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node on ${name}`);
    return n;
  }

  // The network's controls (net.ts, controls.ts).
  cut(name: string, opts?: { how?: 'drop' | 'down' }) {
    this.net.cut(name, opts);
  }
  heal(name: string) {
    this.net.heal(name);
  }
  cutBetween(a: string, b: string) {
    this.net.cutBetween(a, b);
  }
  healBetween(a: string, b: string) {
    this.net.healBetween(a, b);
  }
  loss(fraction: number, hosts?: string[]) {
    this.net.loss(fraction, hosts);
  }
  noLoss() {
    this.net.noLoss();
  }

  /** Stop every node (SIGTERM), then remove the network and the chain. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await Promise.allSettled(this.nodes.map((n) => n.close()));
    // The chain's data is in the network's folder: the daemon stops first.
    await this.chain.stop();
    await this.net.destroy();
  }
}
