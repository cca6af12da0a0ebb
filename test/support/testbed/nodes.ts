/**
 * A real node process on a testbed host: `node dist/core/cli/node.js` (the shipped entry point, as
 * test/peers/cluster.ts runs it) inside the host's namespace, with its own data folder, config file
 * (`CORENODE_CONFIG`, JSON), node key (`peers.nodePrivateKey`) and operator wallet (`initial.legacyid`);
 * optionally HTTPS with the testbed's certificate, and a skewed clock: Debian's libfaketime preloaded into
 * the node process (`LD_PRELOAD` and `FAKETIME=+600s`, what the `faketime` command sets), nothing in the
 * product (test/support/faketime.ts).
 *
 * The runner reaches its API at `http(s)://127.0.0.1:<port>` (expose.ts), piped to the unix socket that the
 * host's forwarder serves and carries to the node's port on the host's loopback: a cut host is still
 * reachable for the test's own calls.
 */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../../core/config.ts';
import { SAFE_NODE, type Answer, type Client } from '../node.ts';
import { entryArgs } from '../entry.ts';
import { eventually } from '../wait.ts';
import { forgetSkew, skewEnv } from '../faketime.ts';
import { HOST_RPC_PORT, listedAddress } from './chain.ts';
import { clientFor } from './client.ts';
import { exposeUnix, type Exposed } from './expose.ts';
import { newNodeKey, newWallet, type NodeKey, type Wallet } from './keys.ts';
import type { NetHost } from './net.ts';
import type { NsProcess } from './procs.ts';
import type { Cert } from './tls.ts';

/** The API port of a node when none is given: 16127, or for the n-th node behind a router 16127 + 10n (the reference's API ports). */
export const API_PORT = 16127;

export interface NodeOptions {
  port?: number;
  /** Serve HTTPS with the testbed's certificate: on its API port (true), or beside HTTP on the next port ('beside'). */
  tls?: boolean | 'beside';
  /** Run under faketime this many seconds ahead (negative: behind). */
  clockOffsetSeconds?: number;
  /** Keep its ports mapped through its router's miniupnpd (default: when its router runs one). */
  upnp?: boolean;
  /** In the node list (default true). */
  listed?: boolean;
  /** For a dual-stack host: the address family its list entry names (default v4). */
  listAt?: 'v4' | 'v6';
  /** Plugins it serves besides host and node (default identity, daemon, peers). */
  plugins?: string[];
  /** Config merged over the testbed's (objects key by key, one level deep: `peers: {pingMs}` keeps the rest). */
  config?: Record<string, unknown>;
}

export const DEFAULT_PLUGINS = ['identity', 'daemon', 'peers'];

/** What the testbed gives every node (its `start` options). */
export interface NodeContext {
  coreTeam: string[];
  chain: { user: string; password: string };
  cert?: Cert;
  /** Folder of manifests per plugin set (made once). */
  manifests(plugins: string[]): string;
  /** Config every node gets, under its own options. */
  config?: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** `over` on `base`, objects merged one level deep. */
export function mergeConfig(base: Record<string, unknown>, over: Record<string, unknown> = {}): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isObject(v) && isObject(out[k]) ? { ...(out[k] as object), ...v } : v;
  return out;
}

export class TestbedNode implements Client {
  readonly nodeKey: NodeKey = newNodeKey();
  readonly operator: Wallet = newWallet();
  readonly port: number;
  /** HTTPS on its API port. */
  readonly tls: boolean;
  readonly dir: string;
  readonly dataDir: string;
  readonly configFile: string;
  readonly logFile: string;
  readonly socketPath: string;
  /** Where the node list shows it (`IP:PORT`, `[v6]:PORT`). */
  readonly listedAddress: string;
  readonly listed: boolean;
  config: Record<string, unknown>;
  url = '';
  private proc?: NsProcess;
  private exposed?: Exposed;
  private http?: Client;

  constructor(
    readonly name: string,
    readonly host: NetHost,
    readonly o: NodeOptions,
    private readonly ctx: NodeContext,
  ) {
    this.port = o.port ?? API_PORT;
    this.tls = o.tls === true;
    this.listed = o.listed !== false;
    this.dir = path.join(host.dir, 'node');
    this.dataDir = path.join(this.dir, 'data');
    this.configFile = path.join(this.dir, 'config.json');
    this.logFile = path.join(this.dir, 'node.log');
    this.socketPath = path.join(host.dir, 'api.sock');
    fs.mkdirSync(this.dataDir, { recursive: true });
    const v6 = o.listAt === 'v6' || !host.publicV4;
    if (v6 && !host.publicV6) throw new Error(`${name}: no IPv6 address to list`);
    this.listedAddress = listedAddress(v6 ? host.publicV6! : host.publicV4!, this.port);
    host.ports = [...new Set([...host.ports, this.port])];
    const upnp = (o.upnp ?? !!host.router?.igdUrl) && host.router?.igdUrl;
    const plugins = o.plugins ?? DEFAULT_PLUGINS;
    const base: Record<string, unknown> = {
      // All addresses: the peers plugin then binds no source address and learns its public IP from its peers.
      api: { port: this.port, host: host.v6 ? '::' : '0.0.0.0', ...(o.tls ? { tls: { cert: ctx.cert!.cert, key: ctx.cert!.key, ...(o.tls === 'beside' ? { port: 'next' } : {}) } } : {}) },
      dataDir: this.dataDir,
      manifestsDir: ctx.manifests(plugins),
      log: { level: process.env.TEST_LOG ?? 'warn' },
      watch: false,
      initial: { legacyid: this.operator.legacyid },
      coreTeam: ctx.coreTeam,
      node: { ...SAFE_NODE, ...(upnp ? { upnp: { enabled: true, gatewayUrl: host.router!.igdUrl } } : {}) },
      daemon: { rpc: { url: `http://127.0.0.1:${HOST_RPC_PORT}/`, user: ctx.chain.user, password: ctx.chain.password } },
      peers: { membership: 'nodelist', nodePrivateKey: this.nodeKey.secret },
    };
    this.config = mergeConfig(mergeConfig(base, ctx.config), o.config);
    // The node's own key stays whatever the shared config says about peers.
    this.config.peers = { ...(this.config.peers as object), nodePrivateKey: this.nodeKey.secret };
  }

  /** The pairs the host's forwarder carries for this node: its API socket. */
  forwardPairs(): string[] {
    return [`unix:${this.socketPath}`, `tcp:127.0.0.1:${this.port}`];
  }

  private client(): Client {
    if (!this.http) throw new Error(`${this.name} has not been started`);
    return this.http;
  }
  request = (method: string, p: string, init?: RequestInit): Promise<Answer> => this.client().request(method, p, init);
  get = (p: string, headers?: Record<string, string>) => this.client().get(p, headers);
  post = (p: string, body: unknown, headers?: Record<string, string>) => this.client().post(p, body, headers);

  running(): boolean {
    return !!this.proc?.running();
  }

  get pid(): number | undefined {
    return this.running() ? this.proc!.child.pid : undefined;
  }

  /** Start the process (again, on the same data) and wait until it answers `/core/version`. */
  async start(opts: { timeoutMs?: number } = {}): Promise<void> {
    if (this.running()) throw new Error(`${this.name} is running`);
    fs.writeFileSync(this.configFile, JSON.stringify(this.config, null, 2));
    if (!this.exposed) {
      this.exposed = await exposeUnix(this.socketPath);
      this.url = `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.exposed.port}`;
      this.http = clientFor(this.url, this.ctx.cert?.pem);
    }
    const off = this.o.clockOffsetSeconds;
    const skew = off ? skewEnv(off) : {};
    const log = fs.openSync(this.logFile, 'a');
    this.proc = this.host.spawn([process.execPath, '--max-semi-space-size=2', ...entryArgs('node')], {
      cwd: REPO_ROOT,
      env: { ...process.env, CORENODE_CONFIG: this.configFile, ...skew },
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    const proc = this.proc;
    if (off) void proc.exited.then(() => forgetSkew(proc.child.pid));
    await eventually(
      async () => {
        if (!proc.running()) throw new Error(`node ${this.name} exited: ${fs.readFileSync(this.logFile, 'utf8').slice(-1500)}`);
        return (await this.get('/core/version').catch(() => null))?.status === 200;
      },
      { what: `node ${this.name} answering`, everyMs: 200, timeoutMs: opts.timeoutMs ?? 60_000 },
    );
  }

  /** Signal the node (SIGKILL by default: kill -9) and wait until it is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.proc;
    if (!p) return;
    p.signal(signal);
    await p.exited;
  }

  /** SIGTERM (the node closes its stores), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    await this.proc?.stop(10_000);
  }

  /** Stop, and close the runner's port. */
  async close(): Promise<void> {
    await this.stop();
    await this.exposed?.close();
    this.exposed = undefined;
  }
}
