/**
 * `npm run bench:apps`: two figures against the test Docker (test/support/docker.ts), baselines measured
 * in the same run.
 *
 * 1. Install of a cached image through the node (a test install: policy check, network, pull check against
 *    the registry, a loop-mounted ext4 volume, create, start; timed until the node reports the container
 *    started) against `docker create` + `docker start` of the same image through the CLI. Rounds alternate.
 *    Ratio = CLI time / node time (goal >= 0.8). Also against create + start through the API alone, since
 *    the CLI's own start-up (two processes of a 40 MB binary) weighs on a busy machine.
 * 2. The reconciler's CPU with 50 running containers at its default interval (5 s): process CPU time over
 *    a measured window, as % of one core (goal < 1%), and dockerd's CPU in the same window.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Datastore from 'nedb-promises';
import Docker from 'dockerode';
import { TEST_ENGINE_REGISTRIES, ensureDocker, stopDocker, unmountUnder } from '../../test/support/docker.ts';
import { bitcoinWallet } from '../../test/support/wallets.ts';
import { freeAppPort, hardNofile, signedMessage, startAppsNode, v3Spec } from '../../test/apps/support.ts';
import { Engine } from '../../plugins/apps/engine.ts';
import { Installer, type InstalledApp } from '../../plugins/apps/installer.ts';
import { PolicyHolder } from '../../plugins/apps/policy.ts';
import { Reconciler } from '../../plugins/apps/reconciler.ts';
import { Volumes } from '../../plugins/apps/volumes.ts';
import { LABEL_APP, LABEL_COMPONENT, LABEL_HASH, LABEL_MANAGED } from '../../plugins/apps/names.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 9);
const CONTAINERS = Number(process.env.CONTAINERS ?? 50);
const WINDOW_MS = Number(process.env.WINDOW_MS ?? 30_000);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const quiet = { info() {}, warn() {} };

/** When each step's last line arrived (ms after the request), per round, for the breakdown. */
const stepTimes: Record<string, number[]> = {};

/** ms from the request until the node reports the last container started; then waits for the removal. */
async function nodeInstall(url: string, headers: Record<string, string>, app: string): Promise<number> {
  const seen: Record<string, number> = {};
  const t0 = performance.now();
  const res = await fetch(`${url}/apps/testappinstall/${app}`, { headers });
  let started = 0;
  let buf = '';
  let lastLine: any;
  for await (const chunk of res.body as any) {
    buf += Buffer.from(chunk).toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      lastLine = line;
      if (!started && line.step) seen[line.step] = performance.now() - t0;
      if (line.step === 'start' && !started) started = performance.now() - t0;
    }
  }
  if (!started || lastLine?.status !== 'success') throw new Error(`node install failed: ${JSON.stringify(lastLine)}`);
  for (const [k, v] of Object.entries(seen)) (stepTimes[k] ??= []).push(v);
  return started;
}

async function cliInstall(cli: (a: string[]) => Promise<string>, image: string, port: number): Promise<number> {
  const t0 = performance.now();
  await cli(['create', '--name', 'benchcli', '-p', `127.0.0.1:${port}:8080`, image]);
  await cli(['start', 'benchcli']);
  const ms = performance.now() - t0;
  await cli(['rm', '-f', 'benchcli']);
  return ms;
}

/** The CLI making what the node makes: its own network, TCP and UDP published, the same limits. */
async function cliSameInstall(cli: (a: string[]) => Promise<string>, image: string, port: number): Promise<number> {
  const t0 = performance.now();
  await cli(['network', 'create', '--subnet', '172.23.250.0/24', 'benchnet']);
  await cli(['create', '--name', 'benchsame', '--network', 'benchnet', '--cpus', '0.5', '--memory', '200m', '--memory-swap', '2200m', '-p', `127.0.0.1:${port}:8080/tcp`, '-p', `127.0.0.1:${port}:8080/udp`, image]);
  await cli(['start', 'benchsame']);
  const ms = performance.now() - t0;
  await cli(['rm', '-f', 'benchsame']);
  await cli(['network', 'rm', 'benchnet']);
  return ms;
}

/** The same create + start through the Docker API (dockerode), without the CLI's process start-up. */
async function apiInstall(docker: Docker, image: string, port: number): Promise<number> {
  const t0 = performance.now();
  const c = await docker.createContainer({
    name: 'benchapi',
    Image: image,
    ExposedPorts: { '8080/tcp': {} },
    HostConfig: { PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: String(port) }] } },
  });
  await c.start();
  const ms = performance.now() - t0;
  await c.remove({ force: true });
  return ms;
}

function procCpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime in clock ticks (100 Hz)
}

async function main() {
  const docker = await ensureDocker();
  console.log(`test docker started in ${docker.startMs} ms`);
  try {
    await docker.cli(['pull', docker.images.node]);

    // --- 1. install through the node vs the CLI ---
    const w = { owner: bitcoinWallet(), coreTeam: bitcoinWallet(), admin: bitcoinWallet(), other: bitcoinWallet() };
    const node = await startAppsNode({ docker, wallets: w });
    const nodeMs: number[] = [];
    const cliMs: number[] = [];
    const apiMs: number[] = [];
    const sameMs: number[] = [];
    const api = new Docker({ socketPath: docker.socketPath });
    try {
      const port = await freeAppPort();
      const spec = v3Spec(w.owner.legacyid, 'benchapp', docker.images.node, port);
      // A stopped container outside the node keeps the image cached between rounds (the node's removal
      // and the CLI's rm would otherwise drop it, and every round would pull).
      await docker.cli(['create', '--name', 'benchkeeper', docker.images.node]);
      const reg = await node.post('/apps/appregister', await signedMessage(w.owner, spec), node.headers.owner);
      if (reg.json?.status !== 'success') throw new Error(reg.text);
      for (let r = 0; r < ROUNDS; r++) {
        cliMs.push(await cliInstall(docker.cli, docker.images.node, port));
        apiMs.push(await apiInstall(api, docker.images.node, port));
        sameMs.push(await cliSameInstall(docker.cli, docker.images.node, port));
        nodeMs.push(await nodeInstall(node.url, node.headers.coreTeam, 'benchapp'));
      }
    } finally {
      await node.close();
      await docker.cli(['rm', '-f', 'benchkeeper']).catch(() => '');
    }
    const n = median(nodeMs);
    const c = median(cliMs);
    console.log(`\ninstall of a cached image (median of ${ROUNDS}):`);
    console.log(`  docker create + start (CLI): ${c.toFixed(0)} ms   [${cliMs.map((x) => x.toFixed(0)).join(', ')}]`);
    console.log(`  node test install to started: ${n.toFixed(0)} ms   [${nodeMs.map((x) => x.toFixed(0)).join(', ')}]`);
    console.log(`  ratio CLI / node: ${(c / n).toFixed(2)} (goal >= 0.8)`);
    console.log(`  node steps done at (median ms after the request): ${Object.entries(stepTimes).map(([k, v]) => `${k} ${median(v).toFixed(0)}`).join(', ')}`);
    const a = median(apiMs);
    console.log(`  create + start through the API alone (dockerode, no CLI start-up): ${a.toFixed(0)} ms   [${apiMs.map((x) => x.toFixed(0)).join(', ')}]`);
    console.log(`  ratio API / node: ${(a / n).toFixed(2)} (the node adds the policy check, network, pull check, volume)`);
    const m = median(sameMs);
    console.log(`  CLI making the same container (own network, TCP+UDP published, limits): ${m.toFixed(0)} ms   [${sameMs.map((x) => x.toFixed(0)).join(', ')}]`);
    console.log(`  ratio CLI-same / node: ${(m / n).toFixed(2)}`);

    // --- 2. reconciler CPU with N running containers ---
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apps-bench-'));
    const volumes = new Volumes(path.join(dir, 'volumes'), path.join(dir, 'mounts'));
    const engine = new Engine({ socketPath: docker.socketPath, subnetBase: '172.23', publishHost: '127.0.0.1', nodeHostIp: '', nofile: hardNofile(), registries: TEST_ENGINE_REGISTRIES }, volumes);
    const store = Datastore.create({ filename: path.join(dir, 'installed.db'), autoload: true }) as any;
    const policy = new PolicyHolder({ sources: [], file: path.join(dir, 'p.json'), isCoreTeam: () => false, verify: () => false, onChange: () => {}, now: Date.now, log: quiet });
    const installer = new Installer(engine, store, policy, Date.now);
    await docker.cli(['pull', docker.images.busybox]);
    const names = Array.from({ length: CONTAINERS }, (_, i) => `corebench${i}`);
    try {
      for (let i = 0; i < names.length; i += 5) {
        await Promise.all(
          names.slice(i, i + 5).map(async (name, k) => {
            const app = `bench${i + k}`;
            const ct = await engine.docker.createContainer({
              name,
              Image: docker.images.busybox,
              Cmd: ['/bin/sleep', '100000'],
              Labels: { [LABEL_MANAGED]: 'true', [LABEL_APP]: app, [LABEL_COMPONENT]: app, [LABEL_HASH]: 'bench' },
              HostConfig: { RestartPolicy: { Name: 'no' } },
            });
            await ct.start();
            const rec: InstalledApp = { name: app, owner: 'bench', hash: 'bench', version: 3, appSpecification: {}, installedAt: Date.now(), components: [{ name: app, container: name, desired: 'running' }] };
            await store.insert(rec);
          }),
        );
      }
      const rec = new Reconciler(engine, installer, Date.now, quiet);
      await rec.adopt();
      const dockerdPid = Number(fs.readFileSync(path.join(docker.root, 'docker.pid'), 'utf8'));
      for (const [label, interval, window] of [
        ['default interval 5000 ms', 5000, WINDOW_MS],
        ['stress interval 200 ms', 200, 10_000],
      ] as const) {
        const cpu0 = process.cpuUsage();
        const d0 = procCpuMs(dockerdPid);
        const ticks0 = rec.stats.ticks;
        const t0 = performance.now();
        rec.start(interval);
        await new Promise((r) => setTimeout(r, window));
        await rec.stop();
        const wall = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        const ms = (cpu.user + cpu.system) / 1000;
        const ticks = rec.stats.ticks - ticks0;
        console.log(`\nreconciler, ${CONTAINERS} running containers, ${label}, ${(wall / 1000).toFixed(0)} s window:`);
        console.log(`  ticks: ${ticks}, node CPU ${ms.toFixed(0)} ms = ${((100 * ms) / wall).toFixed(2)}% of one core (goal < 1% at the default interval), ${(ms / Math.max(1, ticks)).toFixed(1)} ms per tick`);
        console.log(`  dockerd CPU in the same window: ${(((procCpuMs(dockerdPid) - d0) * 100) / wall).toFixed(2)}% of one core`);
        if (rec.stats.starts) console.log(`  (the reconciler started ${rec.stats.starts} containers: not all were running)`);
      }
    } finally {
      await Promise.all(names.map((n) => engine.removeContainer(n).catch(() => {})));
      await unmountUnder(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    await stopDocker();
  }
}

main().catch(async (e) => {
  console.error(e);
  await stopDocker();
  process.exit(1);
});
