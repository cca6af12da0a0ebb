/**
 * `npm run bench:apps-inside`: two figures of issue 14 against the test Docker (test/support/docker.ts),
 * baselines measured in the same run.
 *
 * 1. The monitor's sampler with 50 running containers: the node's CPU time per sampling round (one-shot
 *    stats and inspect of every container, one SQLite transaction), as a share of one core at the default
 *    60 s interval (goal < 1%); dockerd's CPU per round beside it; baseline: `docker stats --no-stream`
 *    of the same containers (the CLI's one round, wall time).
 * 2. `GET /apps/applog/:app/all` on 10 MB of logs through the node (HTTP, auth, demultiplexing, JSON
 *    envelope) against reading the same log straight from Docker's API (dockerode, raw multiplexed
 *    buffer) and `docker logs` (CLI). Medians of ROUNDS alternating rounds; ratio node / direct.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Datastore from 'nedb-promises';
import { TEST_ENGINE_REGISTRIES, ensureDocker, stopDocker, unmountUnder } from '../../test/support/docker.ts';
import { hardNofile, makeWallets, startAppsNode } from '../../test/apps/support.ts';
import { Engine } from '../../plugins/apps/engine.ts';
import { Installer, type InstalledApp } from '../../plugins/apps/installer.ts';
import { Monitor } from '../../plugins/apps/monitor.ts';
import { PolicyHolder } from '../../plugins/apps/policy.ts';
import { Volumes } from '../../plugins/apps/volumes.ts';
import { labelsFor } from '../../plugins/apps/names.ts';

const run = promisify(execFile);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const CONTAINERS = Number(process.env.CONTAINERS ?? 50);
const SAMPLE_ROUNDS = Number(process.env.SAMPLE_ROUNDS ?? 10);
const LOG_BYTES = 10 * 1024 * 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const quiet = { info() {}, warn() {} };

function procCpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100; // utime + stime in clock ticks (100 Hz)
}

async function main() {
  const docker = await ensureDocker();
  const dir = fs.mkdtempSync('/tmp/apps2-bench-');
  const names = Array.from({ length: CONTAINERS }, (_, i) => `coresample${i}`);
  const engine = new Engine({ socketPath: docker.socketPath, subnetBase: '172.23', publishHost: '127.0.0.1', nodeHostIp: '', nofile: hardNofile(), registries: TEST_ENGINE_REGISTRIES }, new Volumes(path.join(dir, 'v'), path.join(dir, 'm')));
  let node: Awaited<ReturnType<typeof startAppsNode>> | null = null;
  try {
    await docker.cli(['pull', docker.images.busybox]);
    // --- 1. the sampler ---
    const store = Datastore.create({ filename: path.join(dir, 'installed.db'), autoload: true }) as any;
    const policy = new PolicyHolder({ sources: [], file: path.join(dir, 'p.json'), isCoreTeam: () => false, verify: () => false, onChange: () => {}, now: Date.now, log: quiet });
    const installer = new Installer(engine, store, policy, Date.now);
    for (let i = 0; i < names.length; i += 5)
      await Promise.all(
        names.slice(i, i + 5).map(async (name, k) => {
          const app = `sample${i + k}`;
          const ct = await engine.docker.createContainer({ name, Image: docker.images.busybox, Cmd: ['/bin/sleep', '100000'], Labels: labelsFor(app, app, 'bench'), HostConfig: { NanoCpus: 1e8, Memory: 100 * 1024 * 1024 } });
          await ct.start();
          await store.insert({ name: app, owner: 'bench', hash: 'bench', version: 3, appSpecification: {}, installedAt: Date.now(), components: [{ name: app, container: name, desired: 'running' }] } satisfies InstalledApp);
        }),
      );
    const monitor = new Monitor(path.join(dir, 'monitor.sqlite'), engine, installer, Date.now, quiet);
    await monitor.round(); // warm: the first round has no previous CPU reading
    const dockerdPid = Number(fs.readFileSync(path.join(docker.root, 'docker.pid'), 'utf8'));
    const cpu0 = process.cpuUsage();
    const d0 = procCpuMs(dockerdPid);
    const t0 = performance.now();
    for (let i = 0; i < SAMPLE_ROUNDS; i++) await monitor.round();
    const wall = (performance.now() - t0) / SAMPLE_ROUNDS;
    const c = process.cpuUsage(cpu0);
    const nodeMs = (c.user + c.system) / 1000 / SAMPLE_ROUNDS;
    const dockerdMs = (procCpuMs(dockerdPid) - d0) / SAMPLE_ROUNDS;
    const cliMs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = performance.now();
      await docker.cli(['stats', '--no-stream', ...names]);
      cliMs.push(performance.now() - s);
    }
    console.log(`sampler, ${CONTAINERS} running containers, ${SAMPLE_ROUNDS} rounds (${monitor.stats.samples} samples stored):`);
    console.log(`  node CPU per round ${nodeMs.toFixed(1)} ms (wall ${wall.toFixed(0)} ms) = ${((100 * nodeMs) / 60_000).toFixed(3)}% of one core at the 60 s interval (goal < 1%)`);
    console.log(`  dockerd CPU per round ${dockerdMs.toFixed(0)} ms = ${((100 * dockerdMs) / 60_000).toFixed(3)}% of one core at 60 s`);
    console.log(`  baseline: docker stats --no-stream of the same containers ${median(cliMs).toFixed(0)} ms wall; ratio round wall / CLI ${(wall / median(cliMs)).toFixed(2)}`);
    await monitor.stop();
    await Promise.all(names.map((n) => engine.removeContainer(n).catch(() => {})));

    // --- 2. applog on 10 MB ---
    const w = makeWallets();
    const dataDir = path.join(dir, 'node');
    fs.mkdirSync(path.join(dataDir, 'apps'), { recursive: true });
    const cname = 'corelogbench';
    const lineText = 'x'.repeat(99); // 100 bytes a line with its newline
    const ct = await engine.docker.createContainer({
      name: cname,
      Image: docker.images.busybox,
      Cmd: ['/bin/sh', '-c', `yes ${lineText} | head -c ${LOG_BYTES}; sleep 100000`],
      Labels: labelsFor('logbench', 'logbench', 'bench'),
      HostConfig: { LogConfig: { Type: 'json-file', Config: { 'max-size': '20m', 'max-file': '1' } } },
    });
    await ct.start();
    const installed = Datastore.create({ filename: path.join(dataDir, 'apps', 'installed.db'), autoload: true }) as any;
    await installed.insert({ name: 'logbench', owner: w.owner.legacyid, hash: 'bench', version: 3, appSpecification: { version: 3, name: 'logbench', repotag: docker.images.busybox, ports: [], containerPorts: [], containerData: '/data', cpu: 0.1, ram: 100, hdd: 1 }, installedAt: Date.now(), components: [{ name: 'logbench', container: cname, desired: 'running' }] });
    for (;;) {
      const b = (await ct.logs({ stdout: true, stderr: true, tail: 1 } as any)) as unknown as Buffer;
      if (b.length > 8) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    node = await startAppsNode({ docker, wallets: w, dataDir, apps: { monitor: { intervalMs: 3_600_000 }, guard: { intervalMs: 3_600_000 }, reconcileIntervalMs: 3_600_000 } });
    const viaNode: number[] = [];
    const direct: number[] = [];
    const cli: number[] = [];
    let bytes = 0;
    for (let i = 0; i < ROUNDS; i++) {
      let s = performance.now();
      const res = await fetch(`${node.url}/apps/applog/logbench/all`, { headers: node.headers.owner });
      const body = await res.json();
      viaNode.push(performance.now() - s);
      bytes = body.data.length;
      s = performance.now();
      const raw = (await ct.logs({ stdout: true, stderr: true, tail: 'all' } as any)) as unknown as Buffer;
      direct.push(performance.now() - s);
      if (raw.length < LOG_BYTES) throw new Error(`only ${raw.length} bytes of logs`);
      s = performance.now();
      await run('docker', ['-H', `unix://${docker.socketPath}`, 'logs', cname], { maxBuffer: 64 * 1024 * 1024 });
      cli.push(performance.now() - s);
    }
    console.log(`\napplog, ${(bytes / 1024 / 1024).toFixed(1)} MB of logs, medians of ${ROUNDS}:`);
    console.log(`  through the node (GET /apps/applog/logbench/all): ${median(viaNode).toFixed(0)} ms   [${viaNode.map((x) => x.toFixed(0)).join(', ')}]`);
    console.log(`  Docker API straight (dockerode, raw buffer):       ${median(direct).toFixed(0)} ms`);
    console.log(`  docker logs (CLI):                                 ${median(cli).toFixed(0)} ms`);
    console.log(`  ratio node / API ${(median(viaNode) / median(direct)).toFixed(2)}, node / CLI ${(median(viaNode) / median(cli)).toFixed(2)}`);
    await node.close();
    node = null;
    await engine.removeContainer(cname);
  } finally {
    if (node) await node.close().catch(() => {});
    await Promise.all(names.map((n) => engine.removeContainer(n).catch(() => {})));
    await engine.removeContainer('corelogbench').catch(() => {});
    await unmountUnder(dir);
    fs.rmSync(dir, { recursive: true, force: true });
    await stopDocker();
  }
}

main().catch(async (e) => {
  console.error(e);
  await stopDocker();
  process.exit(1);
});
