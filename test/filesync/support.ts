/**
 * File-sync test nodes: a real host with the identity, node and filesync plugins, each supervising its own
 * Syncthing on loopback (own home under its data folder, GUI/API port on 127.0.0.1, listen address = the
 * node's IP and API port + 2, discovery and relays off). Ports 27000-27499 (this area's range). Nodes of a
 * multi-node test each listen on their own 127.x address and run the real peers plugin (the peer protocol
 * keeps one link per IP), seeded with the first; the apps service may be fixture/'s test double.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT, resolveConfig } from '../../core/config.ts';
import { Host } from '../../core/host.ts';
import { fetchAnswer, type Answer, SAFE_NODE } from '../support/node.ts';
import { bitcoinWallet, login } from '../support/wallets.ts';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(HERE, 'fixture');

export const tmp = (name: string) => fs.mkdtempSync(path.join(os.tmpdir(), `h18b-${name}-`));

export const wallets = { admin: bitcoinWallet(), coreTeam: bitcoinWallet(), user: bitcoinWallet() };

/** A plugins folder with the repo's identity, node, filesync (and peers) plugins and the fixture double. */
function pluginsDir(peers: boolean): string {
  const dir = tmp('plugins');
  for (const p of ['identity', 'node', 'filesync', ...(peers ? ['peers'] : [])]) fs.symlinkSync(path.join(REPO_ROOT, 'plugins', p), path.join(dir, p));
  for (const p of fs.readdirSync(path.join(FIXTURE, 'plugins'))) fs.symlinkSync(path.join(FIXTURE, 'plugins', p), path.join(dir, p));
  return dir;
}

function manifestsDir(peers: boolean, doubles: boolean): string {
  const dir = tmp('manifests');
  for (const p of ['host', 'node', 'identity', 'filesync', ...(peers ? ['peers'] : [])]) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${p}.yaml`), path.join(dir, `${p}.yaml`));
  if (doubles) for (const f of fs.readdirSync(path.join(FIXTURE, 'manifests'))) fs.copyFileSync(path.join(FIXTURE, 'manifests', f), path.join(dir, f));
  return dir;
}

export interface FsNode {
  ip: string;
  url: string;
  port: number;
  dataDir: string;
  home: string;
  headers: { admin: Record<string, string>; coreTeam: Record<string, string>; user: Record<string, string> };
  get(p: string, headers?: Record<string, string>): Promise<Answer>;
  post(p: string, body: unknown, headers?: Record<string, string>): Promise<Answer>;
  request(method: string, p: string, init?: RequestInit): Promise<Answer>;
  close(): Promise<void>;
}

export interface FsNodeOptions {
  /** Index in this area's port range: API port 27000 + 20 n, Syncthing GUI/API + 1, Syncthing peers + 2. */
  n: number;
  /** The node's own address (default 127.0.0.1). */
  ip?: string;
  filesync?: Record<string, unknown>;
  /** Run the real peers plugin with these seeds (`ip:port`; [] for the seed itself). */
  seeds?: string[];
  apps?: { root: string; apps: unknown[] };
  login?: boolean;
  /** A data folder to reuse (a node started again keeps its Syncthing home and its stores). */
  dataDir?: string;
}

export const apiPort = (n: number) => 27000 + 20 * n;
export const guiPort = (n: number) => apiPort(n) + 1;

export async function startFsNode(o: FsNodeOptions): Promise<FsNode> {
  const dataDir = o.dataDir ?? tmp(`node${o.n}`);
  const mesh = !!o.seeds;
  const plugins = pluginsDir(mesh);
  const manifests = manifestsDir(mesh, !!o.apps);
  const port = apiPort(o.n);
  const ip = o.ip ?? '127.0.0.1';
  const config = resolveConfig(
    {
      api: { port, host: ip },
      dataDir,
      manifestsDir: manifests,
      pluginsDir: plugins,
      log: { level: process.env.TEST_LOG ?? 'silent' },
      watch: false,
      initial: { legacyid: wallets.admin.legacyid },
      coreTeam: [wallets.coreTeam.legacyid],
      node: { ...SAFE_NODE, eventStream: true, eventStreamKeepaliveMs: 100, softwareDir: path.join(dataDir, 'no-software') },
      filesync: { mode: 'supervise', guiPort: guiPort(o.n), listenHost: ip, globalDiscovery: false, relays: false, reconnectSeconds: 2, follow: { intervalMs: 300 }, ...o.filesync },
      // The peer network as test/peers/cluster.ts runs it: quick top-up, pings and back-off on loopback;
      // open membership (these nodes are on no daemon's node list; test/peers proves the node-list admission).
      ...(mesh ? { peers: { membership: 'open', seeds: o.seeds, maintainMs: 300, pingMs: 1000, backoffBaseMs: 200, backoffMaxMs: 1000, handshakeMs: 3000 } } : {}),
      ...(o.apps ? { 'apps-service-double': o.apps } : {}),
    },
    'filesync test config',
  );
  const host = new Host({ config });
  await host.start();
  await host.listen(port, ip);
  const url = `http://${ip}:${port}`;
  const request = (method: string, p: string, init: RequestInit = {}) => fetchAnswer(url + p, { ...init, method });
  const node: FsNode = {
    ip,
    url,
    port,
    dataDir,
    home: path.join(dataDir, 'filesync', 'syncthing'),
    headers: { admin: {}, coreTeam: {}, user: {} },
    request,
    get: (p, headers) => request('GET', p, { headers }),
    post: (p, body, headers) => request('POST', p, { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'text/plain', ...headers } }),
    async close() {
      await host.close();
      fs.rmSync(plugins, { recursive: true, force: true });
      fs.rmSync(manifests, { recursive: true, force: true });
    },
  };
  if (o.login !== false) {
    // Logins need the node fit: its Syncthing answering (phrases are refused while it is measured unhealthy).
    await until('Syncthing answers', async () => (await node.get('/filesync/health')).json?.status === 'success');
    for (const who of ['admin', 'coreTeam', 'user'] as const) node.headers[who] = { legacyidauth: (await login(node as any, wallets[who])).header };
  }
  return node;
}

/** The events the node's bus holds now (its event stream replays them from id 0, then a keepalive comes). */
export async function eventsOf(node: FsNode, prefix = 'filesync.'): Promise<{ name: string; data: any }[]> {
  const ac = new AbortController();
  const res = await fetch(`${node.url}/core/eventstream`, { headers: { 'last-event-id': '0' }, signal: ac.signal });
  const reader = res.body!.getReader();
  let text = '';
  try {
    while (!text.includes(': keepalive')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
  } finally {
    ac.abort();
  }
  const out: { name: string; data: any }[] = [];
  for (const block of text.split('\n\n')) {
    const name = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (name?.startsWith(prefix) && data) out.push({ name, data: JSON.parse(data) });
  }
  return out;
}

/** The API key the node's Syncthing has now. */
export const apiKeyOf = (home: string) => /<apikey>([^<]+)<\/apikey>/.exec(fs.readFileSync(path.join(home, 'config.xml'), 'utf8'))![1];

export async function until<T>(what: string, fn: () => Promise<T> | T, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await Promise.resolve().then(fn).catch(() => undefined as T);
    if (v) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Mount a tmpfs as a component's volume (the apps double counts it mounted) with its `appdata` folder. */
export function mountVolume(mountpoint: string, size = '64m'): void {
  fs.mkdirSync(mountpoint, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mountpoint]);
  fs.mkdirSync(path.join(mountpoint, 'appdata'));
}

export function unmount(mountpoint: string): void {
  try {
    execFileSync('umount', ['-l', mountpoint], { stdio: 'ignore' });
  } catch {
    /* not mounted */
  }
}

export function unmountUnder(prefix: string): void {
  const mps = fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1]).filter((m) => m && m.startsWith(prefix + '/'));
  for (const m of mps.sort().reverse()) unmount(m);
}
