/**
 * Apps tests: a node serving the host, core, identity, daemon, explorer and apps manifests (copied to a
 * temp folder) against the shared test Docker and, when given, a regtest litecoind; wallets for the owner,
 * the core team, the operator and a stranger; signed policies, signed registrations, payments.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { startNode, type Answer, type TestNode } from '../support/node.ts';
import { ok as okData } from '../support/envelope.ts';
import { TEST_REGISTRY_HOSTS, unmountUnder, type TestDocker } from '../support/docker.ts';
import { freePortIn } from '../support/ports.ts';
import type { Regtest } from '../support/litecoind.ts';
import { bitcoinWallet, type TestWallet } from '../support/wallets.ts';
import { login } from '../support/wallets.ts';
import { globalCommandText } from '../../plugins/peers/api.ts';


export function hardNofile(): number {
  const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  const hard = Number(line?.trim().split(/\s+/)[4]);
  return Number.isFinite(hard) ? Math.min(hard, 100000) : 100000;
}

export function tmp(prefix: string): string {
  return fs.mkdtempSync(`/tmp/apps-${prefix}-`);
}

export interface Wallets {
  owner: TestWallet;
  coreTeam: TestWallet;
  admin: TestWallet;
  other: TestWallet;
}

export const makeWallets = (): Wallets => ({ owner: bitcoinWallet(), coreTeam: bitcoinWallet(), admin: bitcoinWallet(), other: bitcoinWallet() });

export interface AppsNode extends TestNode {
  headers: Record<keyof Wallets, Record<string, string>>;
  policyFile: string;
}

/** Write a policy signed by `signer` to `file`. */
export async function writePolicy(file: string, signer: TestWallet, policy: Record<string, unknown> = {}) {
  const message = JSON.stringify({ issuedAt: Date.now(), blockedRepositories: [], vettedRepositories: ['corenode-test/node'], enterpriseOwners: {}, blockedPorts: [], tamperingBlockedNodes: [], ...policy });
  fs.writeFileSync(file, JSON.stringify({ message, legacyid: signer.legacyid, signature: await signer.sign(message) }));
}

export interface NodeOptions {
  docker: TestDocker;
  wallets: Wallets;
  ltc?: Regtest;
  registryAddress?: string;
  dataDir?: string;
  /** Write a signed policy before start (default true). */
  policy?: boolean;
  apps?: Record<string, unknown>;
  /** Other top-level config keys (e.g. `node: {eventStream: true}`). */
  config?: Record<string, unknown>;
  /** Plugins served besides identity, daemon, explorer and apps (e.g. `volumes`). */
  plugins?: string[];
}

export async function startAppsNode(o: NodeOptions): Promise<AppsNode> {
  const dataDir = o.dataDir ?? tmp('node');
  const policyFile = path.join(dataDir, 'policy-source.json');
  if (o.policy !== false && !fs.existsSync(policyFile)) await writePolicy(policyFile, o.wallets.coreTeam);
  const config: Record<string, unknown> = {
    initial: { legacyid: o.wallets.admin.legacyid },
    coreTeam: [o.wallets.coreTeam.legacyid],
    apps: {
      // This machine's hard open-file limit (20000) is below the reference's 100000.
      docker: { socketPath: o.docker.socketPath, nofile: hardNofile() },
      publishHost: '127.0.0.1',
      registryAddress: o.registryAddress ?? '',
      privateRegistries: TEST_REGISTRY_HOSTS,
      paymentPollMs: 100,
      reconcileIntervalMs: 200,
      policy: { sources: [policyFile], refreshSeconds: 0.2 },
      price: { coinUsd: 1 },
      ...o.apps,
    },
    ...o.config,
  };
  if (o.ltc) {
    config.daemon = { rpc: { url: o.ltc.url, user: o.ltc.user, password: o.ltc.password } };
    config.explorer = { pollIntervalMs: 50, retryIntervalMs: 100, prefetch: 8 };
  } else {
    config.plugins = { daemon: false, explorer: false };
  }
  const node = (await startNode({ plugins: ['identity', 'daemon', 'explorer', 'apps', ...(o.plugins ?? [])], dataDir, config })) as AppsNode;
  node.policyFile = policyFile;
  const close = node.close;
  node.close = async (opts) => {
    await close({ keepData: true });
    if (!opts?.keepData && !o.dataDir) {
      await unmountUnder(dataDir);
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  };
  node.headers = {} as AppsNode['headers'];
  for (const k of Object.keys(o.wallets) as (keyof Wallets)[]) node.headers[k] = { legacyidauth: (await login(node, o.wallets[k])).header };
  return node;
}

export { ok as data, refused as error } from '../support/envelope.ts';

/** The lines of a newline-delimited JSON answer. */
export function ndjson(a: Answer): any[] {
  assert.equal(a.status, 200, a.text);
  assert.match(a.headers.get('content-type') ?? '', /ndjson/, a.text);
  return a.text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

export const last = (lines: any[]) => lines[lines.length - 1];

/** Poll until `fn` answers something truthy. */
export async function until<T>(what: string, fn: () => Promise<T | undefined | null | false>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms ${lastErr ? `(${(lastErr as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export function v3Spec(owner: string, name: string, repotag: string, port: number, extra: Record<string, unknown> = {}) {
  return {
    version: 3,
    name,
    description: 'test app v3',
    owner,
    repotag,
    ports: [port],
    containerPorts: [8080],
    domains: [''],
    enviromentParameters: ['PORT=8080', 'DATA_DIR=/data'],
    commands: [],
    containerData: '/data',
    cpu: 0.5,
    ram: 200,
    hdd: 1,
    instances: 3,
    ...extra,
  };
}

export function component(name: string, repotag: string, port: number, containerPort: number, extra: Record<string, unknown> = {}) {
  return {
    name,
    description: `component ${name}`,
    repotag,
    ports: [port],
    containerPorts: [containerPort],
    domains: [''],
    environmentParameters: [`PORT=${containerPort}`, 'DATA_DIR=/data'],
    commands: [],
    containerData: '/data',
    cpu: 0.3,
    ram: 150,
    hdd: 1,
    ...extra,
  };
}

export function v8Spec(owner: string, name: string, compose: unknown[]) {
  return {
    version: 8,
    name,
    description: 'test app v8',
    owner,
    compose,
    instances: 1,
    contacts: [],
    geolocation: [],
    expire: 22000,
    nodes: [],
    staticip: false,
    enterprise: '',
  };
}

/** A registration or update message signed by `signer`. */
export async function signedMessage(signer: TestWallet, spec: Record<string, unknown>, type = 'coreappregister', timestamp = Date.now()) {
  const text = type + 1 + JSON.stringify(spec) + timestamp;
  return { type, version: 1, appSpecification: spec, timestamp, signature: await signer.sign(text) };
}

/**
 * The caller's signature of a global lifecycle command (plugins/peers/README.md: global app commands):
 * `target` is the app or `component_app`; `force` for appremove and redeploy.
 */
export async function signedCommand(signer: TestWallet, verb: string, target: string, force?: boolean, timestamp = Date.now()) {
  return { timestamp, signature: await signer.sign(globalCommandText({ verb, app: target, force, timestamp })) };
}

/** The query string a global command carries: `?timestamp=…&signature=…`. */
export async function globalQuery(signer: TestWallet, verb: string, target: string, force?: boolean, timestamp = Date.now()) {
  const c = await signedCommand(signer, verb, target, force, timestamp);
  return `?${new URLSearchParams({ timestamp: String(c.timestamp), signature: c.signature })}`;
}

/** Pay `coins` to `address` with the message hash in an OP_RETURN output; answers the txid. */
export async function pay(ltc: Regtest, address: string, coins: number, hash: string): Promise<string> {
  const raw = await ltc.rpc.call<string>('createrawtransaction', [[], [{ [address]: coins }, { data: Buffer.from(hash, 'latin1').toString('hex') }]]);
  const funded = await ltc.rpc.call<{ hex: string }>('fundrawtransaction', [raw]);
  const signed = await ltc.rpc.call<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', [funded.hex]);
  assert.ok(signed.complete);
  return ltc.rpc.call<string>('sendrawtransaction', [signed.hex]);
}

/**
 * A busybox command that idles and ends at SIGTERM: `sleep` as PID 1 has no default SIGTERM action, so
 * every stop of it waited out Docker's 10 s grace (10 s of the repoauth test's 10.6 s).
 */
export const IDLE = ['/bin/sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'];

export const freeAppPort = () => freePortIn(23100, 23999);
/** Host ports of the issue-14 tests (their own range, apart from the other apps tests). */
export const freeAppPort2 = () => freePortIn(28000, 28999);

/** Register and pay several specs in one block; answers when every one is a global spec. */
export async function registerPaid(node: AppsNode, ltc: Regtest, registryAddress: string, signer: TestWallet, specs: Record<string, any>[]): Promise<void> {
  for (const spec of specs) {
    const hash = okData(await node.post('/apps/appregister', await signedMessage(signer, spec), node.headers.owner));
    await pay(ltc, registryAddress, okData(await node.post('/apps/calculateprice', spec)), hash);
  }
  await ltc.mine(1);
  for (const spec of specs) await until(`global ${spec.name}`, async () => (await node.get(`/apps/appspecifications/${spec.name}`)).json?.status === 'success');
}

/** GET a published port of an app (127.0.0.1). */
export async function probe(port: number): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(3000) });
  return res.json();
}
