/**
 * More dockerds in the test's network namespace, one per node that runs an app in the peer tests: with a
 * single dockerd two nodes cannot run the same app (its container names are fixed by the spec). Only the
 * shared test dockerd (test/support/docker.ts) owns the default bridge `docker0`; each of these gets a bridge
 * of its own, made here (`--bridge=<name>`). Not `--bridge=none`: a dockerd started so deletes `docker0`,
 * which made the shared dockerd fail to start when both started at once ("failed to add IPv4 address
 * 172.17.0.1/16 to bridge: no such device", seen in a suite run) and would take the bridge from under it
 * otherwise. No iptables; the node using one is given its own
 * `apps.docker.subnetBase` and `publishHost`, so app networks and published ports do not collide. They pull
 * from the shared test registry on 127.0.0.1 (insecure by default for loopback).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { assertOwnNetworkNamespace, engineInspect } from '../support/docker.ts';
import { eventually } from '../support/wait.ts';

const run = promisify(execFile);

export interface ExtraDockerd {
  socketPath: string;
  cli(args: string[]): Promise<string>;
  inspect(name: string): Promise<any>;
  stop(): Promise<void>;
}

let made = 0;

export async function startExtraDockerd(): Promise<ExtraDockerd> {
  assertOwnNetworkNamespace('an extra test dockerd');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'h17b-dockerd-'));
  // Interface names are at most 15 characters; the subnet is outside 172.17 and the apps' 172.4x.
  const n = made++;
  const bridge = `cnxd${process.pid}x${n}`;
  await run('ip', ['link', 'add', 'name', bridge, 'type', 'bridge']);
  await run('ip', ['addr', 'add', `10.251.${((process.pid % 100) * 2 + n) % 250}.1/24`, 'dev', bridge]);
  await run('ip', ['link', 'set', bridge, 'up']);
  const socketPath = path.join(root, 'docker.sock');
  const log = fs.openSync(path.join(root, 'dockerd.log'), 'a');
  const child: ChildProcess = spawn(
    'dockerd',
    [`--data-root=${root}/data`, `--exec-root=${root}/exec`, `--pidfile=${root}/docker.pid`, `--host=unix://${socketPath}`, '--storage-driver=overlay2', `--bridge=${bridge}`, '--iptables=false', '--ip-forward=false'],
    { stdio: ['ignore', log, log] },
  );
  const cli = async (args: string[]) => (await run('docker', args, { env: { ...process.env, DOCKER_HOST: `unix://${socketPath}` }, maxBuffer: 16 << 20 })).stdout;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const ids = (await cli(['ps', '-aq']).catch(() => '')).split('\n').filter(Boolean);
      if (ids.length) await cli(['rm', '-f', ...ids]).catch(() => '');
      await cli(['network', 'prune', '-f']).catch(() => '');
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await gone;
      clearTimeout(t);
    }
    await run('ip', ['link', 'del', bridge]).catch(() => undefined);
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    await eventually(async () => !!(await cli(['version', '--format', '{{.Server.Version}}']).catch(() => '')).trim(), { what: 'an extra dockerd', everyMs: 200, timeoutMs: 60_000 });
  } catch (e) {
    const tail = fs.readFileSync(path.join(root, 'dockerd.log'), 'utf8').slice(-1500);
    await stop();
    throw new Error(`${(e as Error).message}\n${tail}`);
  }
  return { socketPath, cli, inspect: (name) => engineInspect(socketPath, name), stop };
}
