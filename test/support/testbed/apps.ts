/**
 * Apps on the testbed (`npm run devnet -- --apps`): each node host runs a dockerd of its own, started in
 * the host's namespace as test/support/docker.ts starts the tests' (own data root, exec root, pidfile and
 * unix socket, `--iptables=false --ip-forward=false`; its `docker0` is the host namespace's, never the
 * machine's), with its containers under a cgroup named for the testbed (`--cgroup-parent`), so that a
 * forced cleanup finds them (names.ts). One docker-registry serves every host: it listens on a unix socket
 * and each host's forwarder makes it `127.0.0.1:5555` there (dockerd pulls from loopback over plain HTTP).
 * It holds a small sample web image (busybox httpd), written straight into its storage
 * (test/support/registry-store.ts). The nodes get the apps and explorer plugins, a registry address on the
 * chain to be paid at, and a network policy signed by the testbed's core-team key.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { hardNofile, writePolicy } from '../../apps/support.ts';
import { dockerdArgs, unmountUnder } from '../docker.ts';
import { writeImage } from '../registry-store.ts';
import { eventually } from '../wait.ts';
import type { Testbed } from './index.ts';
import type { NetHost } from './net.ts';
import { mergeConfig } from './nodes.ts';
import type { NsProcess } from './procs.ts';

/** The registry's port on every host's loopback. */
export const REGISTRY_PORT = 5555;
export const APPS_PLUGINS = ['identity', 'daemon', 'explorer', 'apps', 'peers'];
export const SAMPLE_REPO = 'corenode-sample/web';
export const SAMPLE_IMAGE = `127.0.0.1:${REGISTRY_PORT}/${SAMPLE_REPO}:1`;

const registrySocket = (testbedDir: string) => path.join(testbedDir, 'registry.sock');

/** The pair a host's forwarder carries for the registry (`hostForwards` of Testbed.start). */
export function registryForward(h: NetHost): string[] {
  return [`tcp:127.0.0.1:${REGISTRY_PORT}`, `unix:${registrySocket(path.dirname(h.dir))}`];
}

export interface DevnetApps {
  registryAddress: string;
  image: string;
  stop(): Promise<void>;
}

/** A GET on a unix socket (dockerd's Engine API, the registry). */
function getOnSocket(socketPath: string, p: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: p, method, headers: { host: 'localhost' } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The sample image's root: busybox and a page its httpd serves on port 8080. */
function sampleRoot(dir: string) {
  fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'www'), { recursive: true });
  fs.copyFileSync('/bin/busybox', path.join(dir, 'bin/busybox'));
  fs.chmodSync(path.join(dir, 'bin/busybox'), 0o755);
  for (const a of ['sh', 'httpd']) fs.symlinkSync('busybox', path.join(dir, 'bin', a));
  fs.writeFileSync(path.join(dir, 'www/index.html'), '<!doctype html><title>corenode sample</title><p>Hello from an app on the corenode devnet.</p>\n');
}

async function startRegistry(tb: Testbed): Promise<NsProcess> {
  const root = path.join(tb.net.dir, 'registry');
  const rootfs = path.join(root, 'rootfs');
  sampleRoot(rootfs);
  await writeImage(path.join(root, 'data'), SAMPLE_REPO, '1', rootfs, ['/bin/httpd', '-f', '-p', '8080', '-h', '/www']);
  fs.rmSync(rootfs, { recursive: true, force: true });
  const conf = path.join(root, 'registry.yml');
  const sock = registrySocket(tb.net.dir);
  fs.writeFileSync(conf, ['version: 0.1', 'log: { level: warn }', `storage: { filesystem: { rootdirectory: ${root}/data } }`, `http: { net: unix, addr: ${sock} }`, ''].join('\n'));
  const log = fs.openSync(path.join(root, 'registry.log'), 'a');
  // In the internet's namespace: a process of the testbed's, found by its cleanup; it listens on a file.
  const p = tb.net.internet.spawn(['docker-registry', 'serve', conf], { stdio: ['ignore', log, log] });
  fs.closeSync(log);
  await eventually(async () => (await getOnSocket(sock, '/v2/').catch(() => null))?.status === 200, { what: 'the registry', everyMs: 100, timeoutMs: 30_000 });
  return p;
}

interface HostDocker {
  socketPath: string;
  proc: NsProcess;
  root: string;
}

async function startDockerd(tb: Testbed, h: NetHost): Promise<HostDocker> {
  const root = path.join(h.dir, 'docker');
  fs.mkdirSync(root, { recursive: true });
  const socketPath = path.join(root, 'docker.sock');
  const log = fs.openSync(path.join(root, 'dockerd.log'), 'a');
  const proc = h.spawn(
    ['dockerd', ...dockerdArgs(root, socketPath), `--cgroup-parent=/${tb.net.prefix}-${path.basename(h.dir)}`],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  await eventually(
    async () => {
      if (!proc.running()) throw new Error(`dockerd on ${h.name} exited: ${fs.readFileSync(path.join(root, 'dockerd.log'), 'utf8').slice(-1500)}`);
      return (await getOnSocket(socketPath, '/_ping').catch(() => null))?.status === 200;
    },
    { what: `dockerd on ${h.name}`, everyMs: 200, timeoutMs: 60_000 },
  );
  return { socketPath, proc, root };
}

/** Remove a dockerd's containers (its Engine API), then stop it: its containers do not outlive it. */
async function stopDockerd(d: HostDocker) {
  if (d.proc.running()) {
    const list = await getOnSocket(d.socketPath, '/containers/json?all=1').catch(() => null);
    const ids = list?.status === 200 ? (JSON.parse(list.body) as { Id: string }[]).map((c) => c.Id) : [];
    await Promise.all(ids.map((id) => getOnSocket(d.socketPath, `/containers/${id}?force=1&v=1`, 'DELETE').catch(() => null)));
    await getOnSocket(d.socketPath, '/networks/prune', 'POST').catch(() => null);
  }
  await d.proc.stop(30_000);
  await unmountUnder(d.root);
}

/**
 * Start the registry and a dockerd on every node's host, and give the nodes (not started yet) the apps
 * config. The nodes must serve APPS_PLUGINS, and the testbed's hosts forward `registryForward`.
 */
export async function startApps(tb: Testbed): Promise<DevnetApps> {
  const dockerds: HostDocker[] = [];
  let registry: NsProcess | undefined;
  const stop = async () => {
    for (const n of tb.nodes) await n.stop();
    await Promise.all(dockerds.map(stopDockerd));
    await registry?.stop();
  };
  try {
    const policyFile = path.join(tb.net.dir, 'network-policy.json');
    await writePolicy(policyFile, tb.coreTeam, { vettedRepositories: [SAMPLE_REPO] });
    const registryAddress = await tb.chain.ltc.rpc.call<string>('getnewaddress', ['apps', 'legacy']);
    const [reg, ...ds] = await Promise.all([startRegistry(tb), ...tb.nodes.map((n) => startDockerd(tb, n.host))]);
    registry = reg;
    dockerds.push(...ds);
    for (const [i, n] of tb.nodes.entries())
      n.config = mergeConfig(n.config, {
        apps: {
          docker: { socketPath: dockerds[i].socketPath, nofile: hardNofile() },
          registryAddress,
          // The sample registry is on the host's loopback, which a node refuses as an image source otherwise.
          privateRegistries: ['127.0.0.1'],
          policy: { sources: [policyFile], refreshSeconds: 30 },
          paymentPollMs: 2000,
        },
        explorer: { pollIntervalMs: 1000 },
      });
    return { registryAddress, image: SAMPLE_IMAGE, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
