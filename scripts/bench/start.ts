/**
 * `npm run bench:start [-- --runs 3 --idle 10 --before <git ref> --base <git ref>]`: what starting the node costs, three ways, measured in the
 * same run and interleaved so that the machine's load weighs on each alike:
 *
 *   npm start        the command a user types (build check, then node on the compiled JS in dist/)
 *   node dist        what the systemd unit runs (deploy/corenode.service): node on the compiled JS
 *   before: tsx      how `npm start` ran before: its old script (`tsx core/cli/node.ts`) run by `npm start` in
 *                    a scratch package whose node_modules is this one's (npm, a shell, the tsx launcher,
 *                    node with tsx's loader on the TypeScript sources), on the current sources or, with
 *                    `--before main`, on that commit's: the baseline
 *
 * For each: the processes the command leaves and the RSS of each once the node has idled `--idle` seconds
 * (all plugins enabled, no daemon behind them), the time from the command to the first answer of
 * GET /core/version (any answer: the host answers 503 Booting while plugins set up; and the first
 * success), the CPU time all its processes used until then (steadier than wall time on a busy machine),
 * and whether SIGTERM to the command stops every process. Medians over the runs; ratios against the
 * baseline. Temp folders are made under the OS temp dir (start-bench-*) and removed.
 */
import { execSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, processTree, readProc, type Proc } from '../lib/process-tree.ts';
import { freePortIn } from '../../test/support/ports.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const RUNS = arg('runs', 3);
const IDLE_S = arg('idle', 10);

interface Mode {
  name: string;
  command: string[];
  cwd?: string;
}
/**
 * A package whose `npm start` is the old one (`tsx core/cli/node.ts`). With `--before <git ref>` it holds
 * that commit's tree (git archive), so the baseline is the code before this change as well as the old
 * launcher; without it, the current sources.
 */
function baselinePackage(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-bench-before-'));
  const i = process.argv.indexOf('--before');
  let script = `tsx ${path.join(ROOT, 'core/cli/node.ts')}`;
  if (i > 0) {
    execSync(`git -C ${JSON.stringify(ROOT)} archive ${process.argv[i + 1]} | tar -x -C ${JSON.stringify(dir)}`);
    script = 'tsx core/cli/node.ts';
  }
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'before', private: true, type: 'module', scripts: { start: script } }));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}
/**
 * `--base <git ref>`: that commit's tree, built (its own `npm start`, on its own dist/), as a fourth command
 * `npm start <ref>`: the same command before a change, measured interleaved with it.
 */
function basePackage(ref: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-bench-base-'));
  execSync(`git -C ${JSON.stringify(ROOT)} archive ${ref} | tar -x -C ${JSON.stringify(dir)}`);
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  execSync(`${JSON.stringify(process.execPath)} scripts/build.mjs`, { cwd: dir, stdio: 'inherit' });
  return dir;
}
const BEFORE = baselinePackage();
const baseAt = process.argv.indexOf('--base');
const BASE = baseAt > 0 ? { ref: process.argv[baseAt + 1], dir: basePackage(process.argv[baseAt + 1]) } : undefined;
process.on('exit', () => {
  fs.rmSync(BEFORE, { recursive: true, force: true });
  if (BASE) fs.rmSync(BASE.dir, { recursive: true, force: true });
});
const MODES: Mode[] = [
  { name: 'npm start', command: ['npm', 'start'] },
  ...(BASE ? [{ name: `base ${BASE.ref.slice(0, 8)}`, command: ['npm', 'start'], cwd: BASE.dir }] : []),
  { name: 'node dist', command: ['node', '--max-semi-space-size=2', 'dist/core/cli/node.js'] },
  { name: 'before: tsx', command: ['npm', 'start'], cwd: BEFORE },
];

interface Run {
  anyMs: number;
  okMs: number;
  cpuMs: number;
  procs: Proc[];
  stopMs: number;
  leftAfterStop: number;
}

/** The bench's own ports (25900-25999), away from the tests' while a bench runs beside them. */
const freePort = () => freePortIn(25900, 25999);

/** The status of GET /core/version, or 0 when nothing answers yet. */
function probe(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/core/version', timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => (req.destroy(), resolve(0)));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function once(mode: Mode): Promise<Run> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-bench-'));
  const port = await freePort();
  const config = path.join(dir, 'node.yaml');
  fs.writeFileSync(config, `api: { port: ${port}, host: 127.0.0.1 }\ndataDir: ${path.join(dir, 'data')}\nlog: { level: warn }\n`);
  const t0 = performance.now();
  const child = spawn(mode.command[0], mode.command.slice(1), { cwd: mode.cwd ?? ROOT, env: { ...process.env, CORENODE_CONFIG: config }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  let exited = false;
  child.on('exit', () => (exited = true));
  try {
    let anyMs = 0;
    let status = 0;
    while (status !== 200) {
      if (exited) throw new Error(`${mode.name} exited before answering:\n${stderr}`);
      if (performance.now() - t0 > 60_000) throw new Error(`${mode.name}: no answer within 60 s`);
      status = await probe(port);
      if (status && !anyMs) anyMs = performance.now() - t0;
      if (status !== 200) await sleep(5);
    }
    const okMs = performance.now() - t0;
    const cpuMs = processTree(child.pid!).reduce((n, p) => n + p.cpuMs, 0);
    await sleep(IDLE_S * 1000);
    const procs = processTree(child.pid!);
    const pids = procs.map((p) => p.pid);
    const s0 = performance.now();
    child.kill('SIGTERM');
    while (pids.some((p) => readProc(p)) && performance.now() - s0 < 10_000) await sleep(20);
    const left = pids.filter((p) => readProc(p));
    for (const p of left) process.kill(p, 'SIGKILL');
    return { anyMs, okMs, cpuMs, procs, stopMs: performance.now() - s0, leftAfterStop: left.length };
  } finally {
    if (!exited) for (const p of processTree(child.pid!)) process.kill(p.pid, 'SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mb = (b: number) => (b / 1048576).toFixed(0);

async function main() {
  // Build first when stale, so `npm start` is timed as it runs after an install, not after an edit.
  await new Promise<void>((resolve, reject) =>
    spawn(process.execPath, [path.join(ROOT, 'scripts/build.mjs'), '--if-stale'], { stdio: 'inherit' }).on('exit', (c) => (c === 0 ? resolve() : reject(new Error('build failed')))),
  );
  const results = new Map<string, Run[]>(MODES.map((m) => [m.name, []]));
  for (let r = 0; r < RUNS; r++) {
    // Rotate the order each round, so no mode always runs first (or last) after the machine's other work.
    for (let i = 0; i < MODES.length; i++) {
      const mode = MODES[(i + r) % MODES.length];
      results.get(mode.name)!.push(await once(mode));
    }
    process.stderr.write(`round ${r + 1}/${RUNS} done\n`);
  }
  const load = os.loadavg()[0].toFixed(1);
  console.log(`bench:start  ${RUNS} run(s) per command, ${IDLE_S} s idle, ${os.cpus().length} cores, load average ${load}; medians\n`);
  const row = (cells: string[]) => console.log(cells.map((c, i) => (i ? c.padStart(i === cells.length - 1 ? 16 : 11) : c.padEnd(13))).join(''));
  row(['command', 'processes', 'total RSS', 'node RSS', 'any answer', 'first 200', 'CPU to 200', 'SIGTERM']);
  const summary = new Map<string, { rss: number; node: number; any: number; ok: number; cpu: number; n: number }>();
  for (const m of MODES) {
    const runs = results.get(m.name)!;
    const total = median(runs.map((x) => x.procs.reduce((n, p) => n + p.rss, 0)));
    // The node process is the one that listens: the largest of the tree.
    const node = median(runs.map((x) => Math.max(...x.procs.map((p) => p.rss))));
    const s = { rss: total, node, any: median(runs.map((x) => x.anyMs)), ok: median(runs.map((x) => x.okMs)), cpu: median(runs.map((x) => x.cpuMs)), n: median(runs.map((x) => x.procs.length)) };
    summary.set(m.name, s);
    const stopped = runs.every((x) => x.leftAfterStop === 0) ? `all exit ${Math.round(median(runs.map((x) => x.stopMs)))}ms` : 'LEFT PROCS';
    row([m.name, String(s.n), `${mb(total)} MB`, `${mb(node)} MB`, `${Math.round(median(runs.map((x) => x.anyMs)))} ms`, `${Math.round(s.ok)} ms`, `${Math.round(s.cpu)} ms`, stopped]);
  }
  console.log('\nprocesses left (last run):');
  for (const m of MODES) {
    const procs = results.get(m.name)!.at(-1)!.procs;
    console.log(`  ${m.name.padEnd(12)} ${procs.map((p) => `${describe(p)} (${mb(p.rss)} MB)`).join(' -> ')}`);
  }
  const now = summary.get('npm start')!;
  const before = summary.get('before: tsx')!;
  console.log(
    `\nnpm start vs before: processes ${now.n} vs ${before.n}; total RSS ${(now.rss / before.rss).toFixed(2)}x, node RSS ${(now.node / before.node).toFixed(2)}x, ` +
      `first 200 ${(now.ok / before.ok).toFixed(2)}x, CPU to first 200 ${(now.cpu / before.cpu).toFixed(2)}x`,
  );
  if (BASE) {
    const base = summary.get(`base ${BASE.ref.slice(0, 8)}`)!;
    console.log(
      `npm start vs npm start at ${BASE.ref}: node RSS ${(now.node / base.node).toFixed(2)}x, any answer ${(now.any / base.any).toFixed(2)}x, ` +
        `first 200 ${(now.ok / base.ok).toFixed(2)}x, CPU to first 200 ${(now.cpu / base.cpu).toFixed(2)}x`,
    );
  }
  console.log(
    `goals: npm + one node: ${now.n === 2 ? 'yes' : 'no'}; node under 120 MB idle: ${now.node < 120 * 1048576 ? 'yes' : 'no'}; ` +
      `first answer within 1 s: ${now.any <= 1000 ? 'yes' : `no (load average ${load})`} (first 200: ${Math.round(now.ok)} ms)`,
  );
}

await main();
