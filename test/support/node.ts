/** Start a real node host on an ephemeral port with a temp data dir, and talk to it over HTTP. */
import fs from 'node:fs';
import os from 'node:os';
import https from 'node:https';
import path from 'node:path';
import { resolveConfig, REPO_ROOT, type NodeConfig } from '../../core/config.ts';
import { Host } from '../../core/host.ts';
import { ManifestCache } from '../../core/manifest/cache.ts';
import { manifestFiles } from '../../core/manifest/set.ts';
import type { Clock } from '../../core/plugin-api.ts';

export interface TestNode {
  host: Host;
  url: string;
  dataDir: string;
  config: NodeConfig;
  get(path: string, headers?: Record<string, string>): Promise<Answer>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<Answer>;
  request(method: string, path: string, init?: RequestInit): Promise<Answer>;
  close(opts?: { keepData?: boolean }): Promise<void>;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  json: any;
}

/** One HTTP exchange as an Answer: status, headers, text, and the JSON body when there is one. */
export async function fetchAnswer(url: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(url, init);
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Every temp folder made here, removed when the test process exits (a test that failed midway included). */
const made: string[] = [];
process.once('exit', () => {
  for (const d of made) {
    try {
      fs.rmSync(d, { recursive: true, force: true });
    } catch {
      // a folder still in use (a mount a failed test left) stays; the rest go
    }
  }
});

export function tempDir(prefix = 'corenode-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** A controllable clock for expiry tests. */
export class TestClock implements Clock {
  constructor(public t = Date.now()) {}
  now() {
    return this.t;
  }
  advance(ms: number) {
    this.t += ms;
  }
}

export interface StartOptions {
  /**
   * The plugins this node serves: their manifests (with the host's and the node plugin's, always) are
   * copied into a temp folder, so a test depends on no other plugin. Ignored when `manifestsDir` is given.
   */
  plugins?: string[];
  /** Config keys merged over the test defaults. */
  config?: Record<string, unknown>;
  dataDir?: string;
  /** The API port to listen on (default 0: a free one). */
  port?: number;
  /** The address to listen on (default 127.0.0.1; another 127.x address lets nodes share a port, as peers do). */
  address?: string;
  clock?: Clock;
  /** Copy manifests into a temp folder (tests that change them). */
  manifestsDir?: string;
  watch?: boolean;
  /** Manifests already checked (core/manifest/cache.ts); by default the shipped ones (repoManifestCache). */
  manifestCache?: import('../../core/manifest/parse.ts').ManifestLookup;
  /** Called just before any handler runs. */
  onHandler?: (routeId: string, caller: import('../../core/plugin-api.ts').Caller) => void;
}

/** A temp folder with the manifests of the host, the node plugin and `plugins`. */
export function manifestsFor(plugins: string[]): string {
  const dir = tempDir('corenode-manifests-');
  for (const p of new Set(['host', 'node', ...plugins])) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${p}.yaml`), path.join(dir, `${p}.yaml`));
  return dir;
}

/** Node settings that keep a test node from acting on this machine (software updates, restarts, packages, firewall, SSDP). */
export const SAFE_NODE = {
  // No rule added to this machine's firewall (allowport, the ports of installed apps); tests of them name a tool run in a namespace.
  firewall: { tool: 'none' },
  softwareDir: path.join(os.tmpdir(), 'corenode-test-no-software'),
  restartCommand: ['true'],
  ui: { buildCommand: ['false'] },
  daemon: { updateCommand: ['false'] },
  benchmark: { startCommand: ['false'], updateCommand: ['false'] },
  // No SSDP search from the machine's own network: a UPnP route reached in a test asks a gateway that is not there.
  upnp: { gatewayUrl: 'http://127.0.0.1:1/rootDesc.xml' },
};

let shipped: ManifestCache | undefined;
/**
 * The shipped manifests checked once per test process, as the build checks them for dist/: an in-process
 * node then takes them from here instead of parsing each and compiling every route schema at its start
 * (about 220 ms of CPU a start against 95 ms, measured), and compiles a route's schemas on its first request,
 * as a node on the compiled tree does. A manifest a test changed misses and is parsed and checked in full.
 */
export function repoManifestCache(): ManifestCache {
  return (shipped ??= ManifestCache.build(manifestFiles([path.join(REPO_ROOT, 'manifests')])));
}

/** The calls of a test client on a node at `url` (in-process or a child process); POST bodies go as text/plain JSON. */
export type Client = Pick<TestNode, 'url' | 'get' | 'post' | 'request'>;
export function clientAt(url: string): Client {
  return clientOf(url, (method, p, init = {}) => fetchAnswer(url + p, { ...init, method }));
}

/** `get` and `post` over one `request` function. */
function clientOf(url: string, request: Client['request']): Client {
  return {
    url,
    request,
    get: (p, headers) => request('GET', p, { headers }),
    post: (p, body, headers) =>
      request('POST', p, {
        body: typeof body === 'string' || body instanceof Uint8Array ? (body as any) : JSON.stringify(body),
        headers: { 'content-type': 'text/plain', ...headers },
      }),
  };
}

/**
 * The same calls to a node serving HTTPS, over node:https (fetch takes no CA of its own on Node 20): trusting
 * `ca` (a testbed's own certificate), or without a check when none is given (self-signed test certificates).
 */
export function httpsClientAt(url: string, ca?: string): Client {
  return clientOf(url, (method, p, init = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const body = init.body as string | Uint8Array | undefined;
      const opts = { method, headers: init.headers as Record<string, string> | undefined, agent: false, ...(ca ? { ca } : { rejectUnauthorized: false }) };
      const req = https.request(url + p, opts, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
          resolve({ status: res.statusCode!, headers, text, json });
        });
      });
      req.on('error', reject);
      req.end(body);
    }),
  );
}

export async function startNode(opts: StartOptions = {}): Promise<TestNode> {
  const dataDir = opts.dataDir ?? tempDir();
  const manifestsDir = opts.manifestsDir ?? (opts.plugins ? manifestsFor(opts.plugins) : undefined);
  const config = resolveConfig(
    {
      api: { port: opts.port ?? 0, host: opts.address ?? '127.0.0.1' },
      dataDir,
      manifestsDir: manifestsDir ?? path.join(REPO_ROOT, 'manifests'),
      log: { level: process.env.TEST_LOG ?? 'silent' },
      watch: opts.watch ?? false,
      ...opts.config,
      // A test node never acts on this machine: the node plugin's self-update, restart and package commands
      // default to the repository itself, `apt-get` and SIGTERM of this process (a test that walks every
      // route as the operator would reach them). Tests of those routes set their own.
      node: { ...SAFE_NODE, ...(opts.config?.node as object | undefined) },
      // A test node never starts a Syncthing of its own on the default port 8384 (shards run at once): it
      // talks to one that is not there unless its test configures the filesync plugin.
      filesync: { mode: 'external', url: 'http://127.0.0.1:9', configDir: path.join(os.tmpdir(), 'corenode-test-no-syncthing'), follow: { enabled: false }, ...(opts.config?.filesync as object | undefined) },
    },
    'test config',
  );
  const host = new Host({ config, clock: opts.clock, onHandler: opts.onHandler, manifestCache: opts.manifestCache ?? repoManifestCache() });
  await host.start();
  const port = await host.listen(opts.port ?? 0, opts.address ?? '127.0.0.1');
  const url = `http://${opts.address ?? '127.0.0.1'}:${port}`;
  return {
    host,
    dataDir,
    config,
    ...clientAt(url),
    async close(o = {}) {
      await host.close();
      if (!o.keepData && !opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
      if (manifestsDir && !opts.manifestsDir) fs.rmSync(manifestsDir, { recursive: true, force: true });
    },
  };
}
