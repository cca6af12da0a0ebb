/**
 * The real node process for attack tests: `node dist/core/cli/node.js` as a child, configured by a
 * YAML file in a temp folder (CORENODE_CONFIG), so memory figures are the node's own (no tsx launcher
 * between). Only the identity and core plugins run; ports come from 24100-24499
 * (24500-24999 are the volumes tests' app ports: never the same ones, whichever shard runs which).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { Client, eventually } from '../support/http-client.ts';
import { entryArgs } from '../support/entry.ts';
import { freePortIn } from '../support/ports.ts';

export interface NodeProcess {
  child: ChildProcess;
  url: string;
  port: number;
  dataDir: string;
  /** Resident memory now, in MB (VmRSS). */
  rssMb(): number;
  /** The highest resident memory since the process started, in MB (VmHWM). */
  peakRssMb(): number;
  /** Bytes of every file under the data folder. */
  diskBytes(): number;
  stop(): Promise<void>;
}

/** The identity area's ports: 24100-24499. */
export const freePort = () => freePortIn(24100, 24499);

export function tempFolder(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'identity-'));
}

const status = (pid: number, key: string) => {
  const line = fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(key + ':'));
  return line ? Number(line.split(/\s+/)[1]) / 1024 : NaN;
};

function du(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    n += e.isDirectory() ? du(p) : fs.statSync(p).size;
  }
  return n;
}

export interface SpawnOptions {
  dataDir?: string;
  identity?: Record<string, unknown>;
  operator?: string;
}

/** Start the node and wait until it answers (not just listens: it answers 503 while plugins set up). */
export async function spawnNode(opts: SpawnOptions = {}): Promise<NodeProcess & { startMs: number }> {
  const port = await freePort();
  const dataDir = opts.dataDir ?? tempFolder();
  const configFile = path.join(dataDir, '..', `${path.basename(dataDir)}.yaml`);
  const yaml = [
    `api: { port: ${port}, host: 127.0.0.1 }`,
    `dataDir: ${JSON.stringify(dataDir)}`,
    `initial: { legacyid: ${JSON.stringify(opts.operator ?? '')} }`,
    'plugins: { daemon: false, benchmark: false, explorer: false }',
    'log: { level: warn }',
    'watch: false',
    `identity: ${JSON.stringify(opts.identity ?? {})}`,
  ].join('\n');
  fs.writeFileSync(configFile, yaml + '\n');
  const t0 = performance.now();
  const env: NodeJS.ProcessEnv = { ...process.env, CORENODE_CONFIG: configFile };
  delete env.CORENODE_PORT;
  delete env.CORENODE_DATA_DIR;
  const child = spawn(process.execPath, entryArgs('node'), {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output = (output + d).slice(-4000)));
  child.stderr!.on('data', (d) => (output = (output + d).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const probe = new Client(url);
  const stop = async () => {
    probe.close();
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`the node exited (${child.exitCode}): ${output}`);
        const r = await probe.get('/core/version').catch(() => null);
        return r?.json?.status === 'success';
      },
      `the node on port ${port} to answer`,
      60_000,
    );
  } catch (e) {
    await stop();
    throw e;
  }
  const startMs = performance.now() - t0;
  const pid = child.pid!;
  return {
    child,
    url,
    port,
    dataDir,
    startMs,
    rssMb: () => status(pid, 'VmRSS'),
    peakRssMb: () => status(pid, 'VmHWM'),
    diskBytes: () => du(dataDir),
    stop,
  };
}

/** Figures the attack tests measure, printed at the end of the run for the closing note. */
export const figures: string[] = [];
export function figure(line: string): void {
  figures.push(line);
}
