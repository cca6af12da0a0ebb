/**
 * The real Docker the apps tests run against: ONE dockerd per test run (its own data root, exec root,
 * pidfile and unix socket under /tmp/apps-docker-*), Debian's docker-registry on 127.0.0.1, and test
 * images built without any outside registry and written into its storage, so installs really pull.
 *
 * Started on first use by `ensureDocker()`; stopped by mocha's global teardown (this file is a root hook
 * plugin, see .mocharc.cjs) and, should mocha die first, by a process exit handler.
 *
 * No data-root cache across runs: a cold start costs about 2 s of CPU on this 2-core machine (dockerd 0.8 s,
 * the images written into the registry's folder about 0.5 s), cheaper than the risk of reusing a data root
 * a killed run left half-written.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { atExit } from './at-exit.ts';
import { freePortIn } from './ports.ts';
import { writeImage } from './registry-store.ts';

const run = promisify(execFile);

export interface TestDocker {
  /** The dockerd socket (the node's `apps.docker.socketPath`). */
  socketPath: string;
  /** `127.0.0.1:<port>` of the local registry. */
  registry: string;
  /** Images the registry holds (full repotags). */
  images: { busybox: string; node: string };
  /** Run the docker CLI against this dockerd. */
  cli(args: string[], opts?: { input?: string }): Promise<string>;
  /** `docker inspect <container>` through the Engine API (engineInspect). */
  inspect(name: string): Promise<any>;
  root: string;
  /** How long starting everything took (ms), for the record. */
  startMs: number;
}

/**
 * The registries of the tests (the shared one and the private one) run on 127.0.0.1, which a node refuses
 * as an image source unless its operator allows it (`apps.privateRegistries`): every node the tests start
 * with apps allows this host, but the attack tests of registries, which allow one port only.
 */
export const TEST_REGISTRY_HOSTS = ['127.0.0.1'];
/** The `registries` of an Engine made directly by a test or bench (the test registries allowed). */
export const TEST_ENGINE_REGISTRIES = { allowed: TEST_REGISTRY_HOSTS, ownAddresses: [] };

let started: Promise<TestDocker> | null = null;
let procs: { dockerd?: ChildProcess; registry?: ChildProcess; privateRegistry?: ChildProcess; root?: string } = {};
let privateStarted: Promise<PrivateRegistry> | null = null;

/** A second registry that wants a user name and password (`repoauth`), holding the busybox image. */
export interface PrivateRegistry {
  registry: string;
  image: string;
  /** `user:password` as a spec's `repoauth` carries it. */
  repoauth: string;
}

// bcrypt of PRIVATE_PASSWORD (the registry's htpasswd takes bcrypt only), made once with Python's crypt.
const PRIVATE_USER = 'corenode';
const PRIVATE_PASSWORD = 'corenode-test-pw';
const PRIVATE_HTPASSWD = `${PRIVATE_USER}:$2b$10$Hr4pA8W.4xtZC7FKyPriCOhLcMvghBYXTc2JLf5.5cSfjVJ3tKF8.`;

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms: number, logFile?: string): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const tail = logFile && fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-2000) : '';
      throw new Error(`${what} not ready after ${ms} ms: ${(last as Error)?.message ?? ''}\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A container's `docker inspect` object, read from the Engine API over the daemon's socket; fails as the CLI
 * does when there is no such container. The CLI is a Go program whose every run cost about 75 ms of CPU
 * (measured: 148 runs, 11.2 s, in the peer apps test, most of them polls for a container's state); this is
 * one HTTP exchange from the test's own process.
 */
export function engineInspect(socketPath: string, name: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: `/containers/${encodeURIComponent(name)}/json`, headers: { host: 'docker' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`inspect ${name}: ${res.statusCode} ${body.trim()}`));
        // Parsed here, not thrown from the event: a bad answer fails the caller's wait, not the test process.
        try {
          resolve(JSON.parse(body));
        } catch (e) {
          reject(e);
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

/** The docker CLI talks to the test daemon only (DOCKER_HOST), never to a system one. */
function cliFor(socketPath: string) {
  return async (args: string[], opts: { input?: string } = {}) => {
    if (opts.input === undefined) {
      const { stdout } = await run('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${socketPath}` }, maxBuffer: 64 << 20 });
      return stdout;
    }
    return new Promise<string>((resolve, reject) => {
      const p = spawn('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${socketPath}` } });
      let out = '';
      let err = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (err += d));
      p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`docker ${args.join(' ')}: ${err}`))));
      p.stdin.end(opts.input);
    });
  };
}

/** A root filesystem with busybox and its applets. */
function busyboxRoot(dir: string) {
  fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
  fs.mkdirSync(path.join(dir, 'tmp'), { recursive: true });
  fs.copyFileSync('/bin/busybox', path.join(dir, 'bin/busybox'));
  fs.chmodSync(path.join(dir, 'bin/busybox'), 0o755);
  for (const a of ['sh', 'sleep', 'echo', 'cat', 'ls', 'httpd', 'wget', 'true', 'false', 'df', 'mount', 'id'])
    fs.symlinkSync('busybox', path.join(dir, 'bin', a));
}

/** The test server of the node image: answers JSON naming itself, writes to its data folder on /write. */
const SERVER_JS = `
const http = require('http'); const fs = require('fs'); const os = require('os');
const port = Number(process.env.PORT || 8080); const dir = process.env.DATA_DIR || '/data';
http.createServer((req, res) => {
  let wrote = null;
  if (req.url === '/write') { fs.writeFileSync(dir + '/marker', String(Date.now())); wrote = dir + '/marker'; }
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ app: process.env.CORE_APP_NAME, host: os.hostname(), port, wrote, files: fs.existsSync(dir) ? fs.readdirSync(dir) : null }));
}).listen(port, () => console.log('listening on ' + port));
// As PID 1 node has no default SIGTERM action: without this every stop waits out Docker's 10 s grace.
process.on('SIGTERM', () => process.exit(0));
`;

/** busybox + /usr/bin/node with the libraries `ldd` names. */
async function nodeRoot(dir: string) {
  busyboxRoot(dir);
  fs.mkdirSync(path.join(dir, 'usr/bin'), { recursive: true });
  fs.copyFileSync(process.execPath, path.join(dir, 'usr/bin/node'));
  fs.chmodSync(path.join(dir, 'usr/bin/node'), 0o755);
  const { stdout } = await run('ldd', [process.execPath]);
  for (const lib of stdout.match(/\/\S+/g) ?? []) {
    fs.mkdirSync(path.join(dir, path.dirname(lib)), { recursive: true });
    fs.copyFileSync(fs.realpathSync(lib), path.join(dir, lib));
  }
  fs.mkdirSync(path.join(dir, 'app'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'app/server.js'), SERVER_JS);
}

/**
 * Refuses to start a dockerd in the machine's own network namespace: it would add its bridge `docker0`
 * (172.17.0.1/16) and a route to the machine's network, which no test run may touch. `npm test` runs each
 * shard in a namespace of its own; one file at a time runs in one with `scripts/dev/in-netns.sh`. Found
 * when a plain `npx mocha test/volumes/restore-kill.test.ts` left a docker0 on the machine.
 * CORENODE_TEST_NETNS=0 (shards in the machine's namespace, by choice) allows it.
 */
export function assertOwnNetworkNamespace(what: string): void {
  if (process.env.CORENODE_TEST_NETNS === '0') return;
  let self: fs.Stats;
  try {
    self = fs.statSync('/proc/self/ns/net');
  } catch {
    return; // not Linux
  }
  const same = (f: string) => {
    try {
      const s = fs.statSync(f);
      return s.ino === self.ino && s.dev === self.dev;
    } catch {
      return null;
    }
  };
  // A namespace made by `ip netns add` (the shards', in-netns.sh's) is bound under /run/netns. PID 1's may be
  // unreadable (here it is, even to root), so a namespace that is neither named nor known to differ is
  // taken for the machine's.
  let named = false;
  try {
    named = fs.readdirSync('/run/netns').some((n) => same(path.join('/run/netns', n)));
  } catch {
    // no named namespaces
  }
  const own = named || same('/proc/1/ns/net') === false;
  if (!own)
    throw new Error(`${what} would add a bridge to this machine's network: run the test in a network namespace (scripts/dev/in-netns.sh <name> npx mocha <file>), or as \`npm test\` runs it`);
}

/** A test dockerd's own folders and socket under `root`. */
export function dockerdArgs(root: string, socketPath: string): string[] {
  return [
    `--data-root=${root}/data`,
    `--exec-root=${root}/exec`,
    `--pidfile=${root}/docker.pid`,
    `--host=unix://${socketPath}`,
    '--storage-driver=overlay2',
    // No iptables rules on a shared machine; published ports go through the userland proxy.
    '--iptables=false',
    '--ip-forward=false',
  ];
}

async function start(): Promise<TestDocker> {
  assertOwnNetworkNamespace('a test dockerd');
  const t0 = Date.now();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'apps-docker-'));
  procs.root = root;
  const socketPath = path.join(root, 'docker.sock');
  const log = fs.openSync(path.join(root, 'dockerd.log'), 'a');
  procs.dockerd = spawn(
    'dockerd',
    dockerdArgs(root, socketPath),
    { stdio: ['ignore', log, log], detached: false },
  );
  const cli = cliFor(socketPath);
  await waitFor('dockerd', async () => ((await cli(['version', '--format', '{{.Server.Version}}'])).trim() ? true : undefined), 60_000, path.join(root, 'dockerd.log'));

  const port = await freePortIn(23000, 23099);
  const regDir = path.join(root, 'registry');
  fs.mkdirSync(regDir);
  // The test images go straight into the registry's storage (test/support/registry-store.ts): no import
  // and push through dockerd, which gzipped the node image for 6 s of CPU per test Docker. An install
  // pulls them, as from any registry.
  const registry = `127.0.0.1:${port}`;
  const images = { busybox: `${registry}/corenode-test/busybox:1`, node: `${registry}/corenode-test/node:1` };
  busyboxRoot(path.join(root, 'rootfs-busybox'));
  await nodeRoot(path.join(root, 'rootfs-node'));
  await writeImage(regDir, 'corenode-test/busybox', '1', path.join(root, 'rootfs-busybox'), ['/bin/sh']);
  await writeImage(regDir, 'corenode-test/node', '1', path.join(root, 'rootfs-node'), ['/usr/bin/node', '/app/server.js']);
  fs.rmSync(path.join(root, 'rootfs-busybox'), { recursive: true, force: true });
  fs.rmSync(path.join(root, 'rootfs-node'), { recursive: true, force: true });
  const regConf = path.join(root, 'registry.yml');
  fs.writeFileSync(
    regConf,
    ['version: 0.1', 'log: { level: warn }', `storage: { filesystem: { rootdirectory: ${regDir} }, delete: { enabled: true } }`, `http: { addr: 127.0.0.1:${port} }`, ''].join('\n'),
  );
  const regLog = fs.openSync(path.join(root, 'registry.log'), 'a');
  procs.registry = spawn('docker-registry', ['serve', regConf], { stdio: ['ignore', regLog, regLog] });
  await waitFor('docker-registry', async () => ((await fetch(`http://${registry}/v2/`)).ok ? true : undefined), 30_000, path.join(root, 'registry.log'));
  return { socketPath, registry, images, cli, inspect: (name) => engineInspect(socketPath, name), root, startMs: Date.now() - t0 };
}

/** The shared test Docker, started once per run. */
export function ensureDocker(): Promise<TestDocker> {
  started ??= start().catch(async (e) => {
    await stopDocker();
    throw e;
  });
  return started;
}

async function startPrivate(): Promise<PrivateRegistry> {
  const d = await ensureDocker();
  const root = procs.root!;
  const port = await freePortIn(23000, 23099);
  const dir = path.join(root, 'private');
  fs.mkdirSync(path.join(dir, 'data'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'htpasswd'), `${PRIVATE_HTPASSWD}\n`);
  const conf = path.join(dir, 'registry.yml');
  fs.writeFileSync(
    conf,
    [
      'version: 0.1',
      'log: { level: warn }',
      `storage: { filesystem: { rootdirectory: ${dir}/data } }`,
      `http: { addr: 127.0.0.1:${port} }`,
      `auth: { htpasswd: { realm: corenode-test, path: ${dir}/htpasswd } }`,
      '',
    ].join('\n'),
  );
  const log = fs.openSync(path.join(dir, 'registry.log'), 'a');
  procs.privateRegistry = spawn('docker-registry', ['serve', conf], { stdio: ['ignore', log, log] });
  const registry = `127.0.0.1:${port}`;
  await waitFor('private docker-registry', async () => ((await fetch(`http://${registry}/v2/`)).status === 401 ? true : undefined), 30_000, path.join(dir, 'registry.log'));
  // The CLI's credentials go to a config folder of this run, never to the user's ~/.docker.
  const env = { ...process.env, DOCKER_HOST: `unix://${d.socketPath}`, DOCKER_CONFIG: path.join(dir, 'cli') };
  const image = `${registry}/private/busybox:1`;
  await new Promise<void>((resolve, reject) => {
    const p = spawn('docker', ['login', '-u', PRIVATE_USER, '--password-stdin', registry], { env, stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    p.stderr!.on('data', (x) => (err += x));
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`docker login: ${err}`))));
    p.stdin!.end(PRIVATE_PASSWORD);
  });
  await d.cli(['pull', d.images.busybox]);
  await d.cli(['tag', d.images.busybox, image]);
  await run('docker', ['push', image], { env });
  await d.cli(['rmi', image]);
  return { registry, image, repoauth: `${PRIVATE_USER}:${PRIVATE_PASSWORD}` };
}

/** The private registry, started on first use (after the shared Docker). */
export function ensurePrivateRegistry(): Promise<PrivateRegistry> {
  privateStarted ??= startPrivate();
  return privateStarted;
}

/** Loop mounts left under a folder (a failed test's app volumes), deepest first. */
export function mountsUnder(prefix: string): string[] {
  const lines = fs.readFileSync('/proc/self/mounts', 'utf8').split('\n');
  return lines
    .map((l) => l.split(' ')[1]?.replace(/\\040/g, ' '))
    .filter((m): m is string => !!m && m.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

export async function unmountUnder(prefix: string): Promise<void> {
  for (const m of mountsUnder(prefix)) await run('umount', ['-l', m]).catch(() => {});
}

function exited(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => p.once('exit', () => resolve()));
}

/** Stop the registry and dockerd this run started, remove their folder. */
export async function stopDocker(): Promise<void> {
  const { dockerd, registry, privateRegistry, root } = procs;
  procs = {};
  started = null;
  privateStarted = null;
  if (registry && registry.exitCode === null) registry.kill('SIGTERM');
  if (privateRegistry && privateRegistry.exitCode === null) privateRegistry.kill('SIGTERM');
  if (dockerd && dockerd.exitCode === null && root) {
    // Bridge devices of networks outlive dockerd: remove what the run left (it all belongs to this run).
    const cli = cliFor(path.join(root, 'docker.sock'));
    const ids = (await cli(['ps', '-aq']).catch(() => '')).split('\n').filter(Boolean);
    if (ids.length) await cli(['rm', '-f', ...ids]).catch(() => '');
    await cli(['network', 'prune', '-f']).catch(() => '');
  }
  if (dockerd && dockerd.exitCode === null) {
    // dockerd stops its containers (10 s grace each, in parallel) and its containerd on SIGTERM.
    dockerd.kill('SIGTERM');
    const t = setTimeout(() => dockerd.kill('SIGKILL'), 30_000);
    await exited(dockerd);
    clearTimeout(t);
  }
  await exited(registry);
  await exited(privateRegistry);
  if (root) {
    await unmountUnder(root);
    fs.rmSync(root, { recursive: true, force: true });
  }
}

// mocha root hook plugin (.mocharc.cjs `require`): stop everything once the run ends, pass or fail.
export async function mochaGlobalTeardown(): Promise<void> {
  await stopDocker();
}

// mocha interrupted or crashed before its teardown: do not leave daemons behind.
atExit(() => {
  procs.registry?.kill('SIGKILL');
  procs.privateRegistry?.kill('SIGKILL');
  procs.dockerd?.kill('SIGTERM');
});
