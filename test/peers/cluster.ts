/**
 * Real node processes for the peer tests: node i listens on 127.0.0.(2+i) with its own data folder, all
 * seeded with node 0. Each is `node dist/core/cli/node.js` (as shipped) with its own config file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { clientAt, type Answer, type Client, SAFE_NODE } from '../support/node.ts';
import { eventually } from '../support/wait.ts';
import { entryArgs } from '../support/entry.ts';
import { forgetSkew } from '../support/faketime.ts';

export interface ClusterNode {
  i: number;
  ip: string;
  port: number;
  url: string;
  dataDir: string;
  configFile: string;
  child?: ChildProcess;
  get(p: string, headers?: Record<string, string>): Promise<Answer>;
  post(p: string, body: unknown, headers?: Record<string, string>): Promise<Answer>;
  /** The client as the wallet helpers take it. */
  client: Client;
}

export interface ClusterOptions {
  n: number;
  port: number;
  /** Plugins whose manifests the nodes serve (host and node always). */
  plugins: string[];
  operator: string;
  coreTeam?: string[];
  peers?: Record<string, unknown>;
  extra?: (i: number) => Record<string, unknown>;
  /** Environment variables of node i's process, over the test's (a skewed clock, say). */
  env?: (i: number) => Record<string, string>;
  /** How the test talks to node i (default plain HTTP at its API port; an HTTPS-only node needs its own). */
  client?: (i: number, ip: string, port: number) => Client;
}


export class Cluster {
  readonly nodes: ClusterNode[] = [];
  readonly root: string;
  private readonly manifests: string;

  constructor(readonly o: ClusterOptions) {
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), 'h17b-cluster-'));
    this.manifests = path.join(this.root, 'manifests');
    fs.mkdirSync(this.manifests);
    for (const p of new Set(['host', 'node', ...o.plugins])) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${p}.yaml`), path.join(this.manifests, `${p}.yaml`));
    const seed = `127.0.0.2:${o.port}`;
    for (let i = 0; i < o.n; i++) {
      const ip = `127.0.0.${2 + i}`;
      const dataDir = path.join(this.root, `node${i}`);
      const configFile = path.join(this.root, `node${i}.json`);
      const extra = o.extra?.(i) ?? {};
      const config = {
        api: { port: o.port, host: ip },
        dataDir,
        manifestsDir: this.manifests,
        log: { level: process.env.TEST_LOG ?? 'warn' },
        watch: false,
        initial: { legacyid: o.operator },
        ...(o.coreTeam ? { coreTeam: o.coreTeam } : {}),
        node: SAFE_NODE,
        ...extra,
        // `extra(i).peers` adds to the shared peers section (a node's own key, say).
        peers: { seeds: i === 0 ? [] : [seed], maintainMs: 300, pingMs: 1000, backoffBaseMs: 200, backoffMaxMs: 2000, handshakeMs: 3000, ...o.peers, ...(extra.peers as object) },
      };
      fs.writeFileSync(configFile, JSON.stringify(config));
      const client = o.client?.(i, ip, o.port) ?? clientAt(`http://${ip}:${o.port}`);
      const url = client.url;
      this.nodes.push({ i, ip, port: o.port, url, dataDir, configFile, get: client.get, post: client.post, client });
    }
  }

  start(n: ClusterNode) {
    n.child = spawn(process.execPath, entryArgs('node'), {
      cwd: REPO_ROOT,
      env: { ...process.env, CORENODE_CONFIG: n.configFile, ...this.o.env?.(n.i) },
      stdio: ['ignore', 'ignore', process.env.TEST_LOG ? 'inherit' : 'ignore'],
    });
    const pid = n.child.pid;
    // A node with a skewed clock (libfaketime) leaves files in /dev/shm when it is killed.
    if (this.o.env?.(n.i).FAKETIME) n.child.once('exit', () => forgetSkew(pid));
  }

  async ready(n: ClusterNode) {
    await eventually(async () => (await n.get('/core/version').catch(() => null))?.status === 200, { what: `node ${n.i} answering`, everyMs: 200 });
  }

  async startAll() {
    for (const n of this.nodes) this.start(n);
    await Promise.all(this.nodes.map((n) => this.ready(n)));
  }

  async kill(n: ClusterNode, signal: NodeJS.Signals = 'SIGKILL') {
    const c = n.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    await gone;
    n.child = undefined;
  }

  async stop() {
    await Promise.all(this.nodes.map((n) => this.kill(n, 'SIGTERM')));
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

export const data = (a: Answer) => {
  if (a.json?.status !== 'success') throw new Error(`not a success: ${a.status} ${a.text.slice(0, 300)}`);
  return a.json.data;
};
