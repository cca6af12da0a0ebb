/**
 * More dockerds in the test's network namespace, one per node that runs an app in the peer tests: with a
 * single dockerd two nodes cannot run the same app (its container names are fixed by the spec). Only the
 * shared test dockerd (test/support/docker.ts) owns the default bridge `docker0`; these start with
 * `--bridge=none` (one `docker0` per namespace) and no iptables, and the node using one is given its own
 * `apps.docker.subnetBase` and `publishHost`, so app networks and published ports do not collide. They pull
 * from the shared test registry on 127.0.0.1 (insecure by default for loopback).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { eventually } from '../support/wait.ts';

const run = promisify(execFile);

export interface ExtraDockerd {
  socketPath: string;
  cli(args: string[]): Promise<string>;
  stop(): Promise<void>;
}

export async function startExtraDockerd(): Promise<ExtraDockerd> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'h17b-dockerd-'));
  const socketPath = path.join(root, 'docker.sock');
  const log = fs.openSync(path.join(root, 'dockerd.log'), 'a');
  const child: ChildProcess = spawn(
    'dockerd',
    [`--data-root=${root}/data`, `--exec-root=${root}/exec`, `--pidfile=${root}/docker.pid`, `--host=unix://${socketPath}`, '--storage-driver=overlay2', '--bridge=none', '--iptables=false', '--ip-forward=false'],
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
    fs.rmSync(root, { recursive: true, force: true });
  };
  try {
    await eventually(async () => !!(await cli(['version', '--format', '{{.Server.Version}}']).catch(() => '')).trim(), { what: 'an extra dockerd', everyMs: 200, timeoutMs: 60_000 });
  } catch (e) {
    const tail = fs.readFileSync(path.join(root, 'dockerd.log'), 'utf8').slice(-1500);
    await stop();
    throw new Error(`${(e as Error).message}\n${tail}`);
  }
  return { socketPath, cli, stop };
}
