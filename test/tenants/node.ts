/**
 * The node the tenant attacks run against, as it ships: `node dist/core/cli/node.js` as a child process
 * with the identity, daemon, explorer, apps, volumes and peers plugins, on the test dockerd and registry
 * and (when given) a regtest litecoind. Two paying owners, A (the victim) and B (the attacker), a core-team
 * wallet, the operator and a stranger are logged in; what the disk, Docker and the other tenant see is read
 * by the tests themselves (the data folder, `docker.inspect`, the victim's files).
 *
 * Ports of this area: 29000-29999 (the node's API and the apps' host ports).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { clientAt, SAFE_NODE, type Answer, type Client } from '../support/node.ts';
import { entryArgs } from '../support/entry.ts';
import { freePortIn, holdPorts } from '../support/ports.ts';
import { ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { ok } from '../support/envelope.ts';
import { bitcoinWallet, login, type TestWallet } from '../support/wallets.ts';
import { hardNofile, pay, signedMessage, tmp, until, writePolicy } from '../apps/support.ts';

export const freeTenantPort = () => freePortIn(29000, 29999);

export interface TenantWallets {
  /** The victim: owns the app whose data the attacks go after. */
  a: TestWallet;
  /** The attacker: a paying owner of an app of its own on the same node. */
  b: TestWallet;
  coreTeam: TestWallet;
  admin: TestWallet;
  stranger: TestWallet;
}

export const tenantWallets = (): TenantWallets => ({ a: bitcoinWallet(), b: bitcoinWallet(), coreTeam: bitcoinWallet(), admin: bitcoinWallet(), stranger: bitcoinWallet() });

export interface TenantNodeOptions {
  docker: TestDocker;
  wallets: TenantWallets;
  ltc?: Regtest;
  /** The address registrations are paid to (needs `ltc`). */
  registryAddress?: string;
  /** Keys merged over the `apps` section. */
  apps?: Record<string, unknown>;
  /** Other top-level config keys, merged last. */
  config?: Record<string, unknown>;
  /** Plugins served (default: identity, daemon, explorer, apps, volumes, peers). */
  plugins?: string[];
  /** Descriptor limit (soft and hard) of the process. */
  nofile?: number;
  /** Called with the empty data folder before the process starts (records an older node left, say). */
  seed?: (dataDir: string) => void | Promise<void>;
  /**
   * The data folder of an earlier node of this harness, stopped with `keepData`: the node starts again on it
   * (its stores, keys, volumes and the Docker containers it made), as after a restart or an upgrade.
   */
  dataDir?: string;
}

export interface TenantNode extends Client {
  child: ChildProcess;
  port: number;
  dataDir: string;
  configFile: string;
  /** The `legacyidauth` header of each wallet's session. */
  headers: Record<keyof TenantWallets, Record<string, string>>;
  policyFile: string;
  /** Everything the process wrote (the tail of it). */
  output(): string;
  exited(): boolean;
  /** Resident set size in MB, -1 once gone. */
  rssMb(): number;
  /** Stop the process; the data folder (volumes unmounted) is removed unless `keepData`. */
  stop(opts?: { keepData?: boolean }): Promise<void>;
}

/** The test dockerd, a regtest litecoind with coins to pay from, and the address registrations are paid to. */
export async function paidWorld(): Promise<{ docker: TestDocker; ltc: Regtest; registryAddress: string }> {
  const [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
  await ltc.mine(101);
  return { docker, ltc, registryAddress: await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']) };
}

export const TENANT_PLUGINS = ['identity', 'daemon', 'explorer', 'apps', 'volumes', 'peers'];

export async function startTenantNode(o: TenantNodeOptions): Promise<TenantNode> {
  const dir = o.dataDir ? path.dirname(o.dataDir) : tmp('tenants');
  const dataDir = path.join(dir, 'data');
  const manifests = path.join(dir, 'manifests');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.mkdirSync(manifests, { recursive: true });
  const plugins = o.plugins ?? TENANT_PLUGINS;
  for (const p of new Set(['host', 'node', ...plugins])) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${p}.yaml`), path.join(manifests, `${p}.yaml`));
  const policyFile = path.join(dir, 'policy-source.json');
  await writePolicy(policyFile, o.wallets.coreTeam);
  // A node started again on a kept data folder keeps its API port: its apps' host ports were chosen clear of
  // that port's neighbours, which a new port's could be (the node refuses them to apps).
  const keptConfig = path.join(dir, 'node.json');
  const kept = o.dataDir && fs.existsSync(keptConfig) ? (JSON.parse(fs.readFileSync(keptConfig, 'utf8')).api?.port as number | undefined) : undefined;
  const port = kept ?? (await freeTenantPort());
  // The API's neighbours are the node's own ports (refused for apps): no app of the tests is given one.
  holdPorts([port - 1, port + 1, port + 2, port + 3]);
  const config: Record<string, unknown> = {
    api: { port, host: '127.0.0.1' },
    dataDir,
    manifestsDir: manifests,
    log: { level: process.env.TEST_LOG ?? 'warn' },
    watch: false,
    initial: { legacyid: o.wallets.admin.legacyid },
    coreTeam: [o.wallets.coreTeam.legacyid],
    node: SAFE_NODE,
    filesync: { mode: 'external', url: 'http://127.0.0.1:9', follow: { enabled: false } },
    peers: { seeds: [] },
    apps: {
      docker: { socketPath: o.docker.socketPath, nofile: hardNofile() },
      publishHost: '127.0.0.1',
      registryAddress: o.registryAddress ?? '',
      // The test registry only (its host and port): a registry on another loopback port stays refused.
      privateRegistries: [o.docker.registry],
      paymentPollMs: 100,
      reconcileIntervalMs: 200,
      policy: { sources: [policyFile], refreshSeconds: 0.2 },
      price: { coinUsd: 1 },
      // The tenants' apps are installed by hand; a test peer connected for long enough would otherwise
      // let this lone node place every paid app on itself.
      placement: { enabled: false },
      ...o.apps,
    },
    ...(o.ltc
      ? { daemon: { rpc: { url: o.ltc.url, user: o.ltc.user, password: o.ltc.password } }, explorer: { pollIntervalMs: 50, retryIntervalMs: 100, prefetch: 8 } }
      : { plugins: { daemon: false, explorer: false } }),
    ...o.config,
  };
  const configFile = path.join(dir, 'node.json');
  fs.writeFileSync(configFile, JSON.stringify(config, null, 2));
  await o.seed?.(dataDir);
  const argv = entryArgs('node');
  const [cmd, args] = o.nofile
    ? ['bash', ['-c', `ulimit -n ${o.nofile} && exec "$0" "$@"`, process.execPath, ...argv]]
    : [process.execPath, argv];
  const child = spawn(cmd, args as string[], { cwd: REPO_ROOT, env: { ...process.env, CORENODE_CONFIG: configFile }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (b: Buffer) => {
    out += b.toString();
    if (out.length > 1 << 20) out = out.slice(-(1 << 19));
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let gone = false;
  child.once('exit', () => (gone = true));
  const client = clientAt(`http://127.0.0.1:${port}`);
  const node: TenantNode = {
    ...client,
    child,
    port,
    dataDir,
    configFile,
    policyFile,
    headers: {} as TenantNode['headers'],
    output: () => out,
    exited: () => gone,
    rssMb() {
      try {
        return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
      } catch {
        return -1;
      }
    },
    async stop(opts = {}) {
      if (!gone) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(t);
      }
      if (!opts.keepData) {
        // Its apps leave the shared test dockerd with it: the files of this area reuse app names and ports.
        await removeContainersOf(o.docker, dir);
        await unmountUnder(dir);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  };
  try {
    // A node that exits at start (a refused config) ends the wait at once, with what it wrote.
    await until('the node answering /core/version', async () => gone || (await node.get('/core/version').catch(() => null))?.status === 200);
    if (gone) throw new Error(`the node exited at start:\n${out.slice(-4000)}`);
    for (const k of Object.keys(o.wallets) as (keyof TenantWallets)[]) node.headers[k] = { legacyidauth: (await login(node, o.wallets[k])).header };
  } catch (e) {
    await node.stop();
    throw e;
  }
  return node;
}

/** Register `spec` signed by `owner`, pay for it on regtest, and wait until it is a global specification. */
export async function registerAndPay(node: TenantNode, ltc: Regtest, registryAddress: string, owner: keyof TenantWallets, wallets: TenantWallets, spec: Record<string, any>): Promise<string> {
  const hash = ok(await node.post('/apps/appregister', await signedMessage(wallets[owner], spec), node.headers[owner]));
  await pay(ltc, registryAddress, ok(await node.post('/apps/calculateprice', spec)), hash);
  await ltc.mine(1);
  await until(`global ${spec.name}`, async () => (await node.get(`/apps/appspecifications/${spec.name}`)).json?.status === 'success');
  return hash;
}

/**
 * Start a long-running operation (202 + Location) as `headers` and wait for its end: the start's answer, and
 * the operation's record once it is no longer Running (null when the start was refused).
 */
export async function runOperation(node: Client, headers: Record<string, string>, route: string, body: unknown): Promise<{ started: Answer; done: any }> {
  const started = await node.post(route, body, headers);
  if (started.status !== 202) return { started, done: null };
  const { jobId } = started.json.data;
  const done = await until(`operation ${route} (${jobId})`, async () => {
    const d = (await node.get(`/apps/operations/${jobId}`, headers)).json?.data;
    return d && d.status !== 'Running' ? d : null;
  }, 120_000);
  return { started, done };
}

/** The status of an answer and its error envelope's message, for assertions that print what came back. */
export const said = (a: Answer) => `${a.status} ${a.text.slice(0, 400)}`;

/** Remove the containers (and their apps' networks) whose binds lie under `dir`: what one node made. */
async function removeContainersOf(docker: TestDocker, dir: string): Promise<void> {
  const ids = (await docker.cli(['ps', '-aq', '--filter', 'label=corenode.managed=true']).catch(() => '')).split('\n').filter(Boolean);
  const apps = new Set<string>();
  for (const id of ids) {
    const info = await docker.inspect(id).catch(() => null);
    if (!info?.Mounts?.some((m: { Source: string }) => m.Source.startsWith(dir + path.sep))) continue;
    apps.add(info.Config.Labels['corenode.app']);
    await docker.cli(['rm', '-f', id]).catch(() => '');
  }
  await removeFromDocker(docker, [...apps]);
}

/**
 * Remove from the test dockerd the containers and networks of `apps` (a node's stop leaves them, as a node
 * restart must): test files that share a dockerd in one run then never meet each other's containers.
 */
export async function removeFromDocker(docker: TestDocker, apps: string[]): Promise<void> {
  for (const app of apps) {
    const ids = (await docker.cli(['ps', '-aq', '--filter', `label=corenode.app=${app}`]).catch(() => '')).split('\n').filter(Boolean);
    if (ids.length) await docker.cli(['rm', '-f', ...ids]).catch(() => '');
    await docker.cli(['network', 'rm', `coreDockerNetwork_${app}`]).catch(() => '');
  }
}
