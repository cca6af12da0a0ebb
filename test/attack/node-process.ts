/**
 * The real node as a child process (`node dist/core/cli/node.js`, as shipped), for attacks that must hit the
 * process itself: its RSS, descriptors and exit are what the tests judge.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { fetchAnswer, type Answer } from '../support/node.ts';
import { entryArgs } from '../support/entry.ts';
import { freePortIn } from '../support/ports.ts';

export interface NodeProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  url: string;
  dataDir: string;
  /** Everything the process wrote to stdout and stderr. */
  output(): string;
  exited(): boolean;
  get(p: string, headers?: Record<string, string>): Promise<Answer>;
  post(p: string, body: unknown, headers?: Record<string, string>): Promise<Answer>;
  request(method: string, p: string, init?: RequestInit): Promise<Answer>;
  /** Resident set size in MB (VmRSS), or -1 once the process is gone. */
  rssMb(): number;
  /** Open descriptors of the process. */
  fds(): number;
  stop(): Promise<void>;
}

export interface SpawnOptions {
  /** YAML text merged into the config (after port, dataDir, log). */
  extraYaml?: string;
  /** Descriptor limit (soft and hard) of the child. */
  nofile?: number;
}

/** The attack area's ports: 26000-26999. */
export const freePort = () => freePortIn(26000, 26999);

export async function spawnNode(opts: SpawnOptions = {}): Promise<NodeProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hostattack-'));
  const dataDir = path.join(dir, 'data');
  const port = await freePort();
  const config = path.join(dir, 'node.yaml');
  fs.writeFileSync(config, `api: { port: ${port}, host: 127.0.0.1 }\ndataDir: ${dataDir}\nlog: { level: warn }\nwatch: false\n${opts.extraYaml ?? ''}`);
  const argv = entryArgs('node');
  // bash's ulimit, then exec: the node keeps bash's pid and the limit (soft and hard), no extra package.
  const [cmd, args] = opts.nofile
    ? ['bash', ['-c', `ulimit -n ${opts.nofile} && exec "$0" "$@"`, process.execPath, ...argv]]
    : [process.execPath, argv];
  const child = spawn(cmd, args as string[], { cwd: REPO_ROOT, env: { ...process.env, CORENODE_CONFIG: config }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (b: Buffer) => {
    out += b.toString();
    if (out.length > 1 << 20) out = out.slice(-(1 << 19)); // the tail is what matters
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let gone = false;
  child.once('exit', () => (gone = true));
  const url = `http://127.0.0.1:${port}`;
  const request = (method: string, p: string, init: RequestInit = {}) =>
    fetchAnswer(url + p, { signal: AbortSignal.timeout(10_000), ...init, method });
  const node: NodeProcess = {
    child,
    pid: child.pid!,
    port,
    url,
    dataDir,
    output: () => out,
    exited: () => gone,
    request,
    get: (p, headers) => request('GET', p, { headers }),
    post: (p, body, headers) =>
      request('POST', p, { body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'text/plain', ...headers } }),
    rssMb: () => {
      try {
        return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
      } catch {
        return -1;
      }
    },
    fds: () => {
      try {
        return fs.readdirSync(`/proc/${child.pid}/fd`).length;
      } catch {
        return -1;
      }
    },
    async stop() {
      if (!gone) {
        child.kill('SIGTERM');
        const deadline = Date.now() + 10_000;
        while (!gone && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        if (!gone) child.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  // Ready once the plugins are set up (503 Booting before that).
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (gone) throw new Error(`node exited at start:\n${out}`);
    try {
      if ((await node.get('/core/version')).status === 200) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      await node.stop();
      throw new Error(`node not ready within 60 s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return node;
}

/** Total size in bytes of the files under `dir`. */
export function diskUsage(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += fs.statSync(path.join(e.parentPath, e.name)).size;
  }
  return total;
}

/** Poll `fn` every `everyMs` until `ms` have passed; returns how many probes passed and failed. */
export async function during(ms: number, everyMs: number, fn: () => Promise<boolean>): Promise<{ ok: number; failed: number }> {
  const end = Date.now() + ms;
  const r = { ok: 0, failed: 0 };
  while (Date.now() < end) {
    const next = Date.now() + everyMs;
    (await fn().catch(() => false)) ? r.ok++ : r.failed++;
    await new Promise((res) => setTimeout(res, Math.max(0, next - Date.now())));
  }
  return r;
}
