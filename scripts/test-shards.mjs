#!/usr/bin/env node
/**
 * `npm test` with no arguments: the test areas in a few concurrent mocha processes. The tests spend most of
 * their time waiting on real daemons, Docker, git builds and child nodes rather than computing, so areas
 * that share nothing run side by side. Each shard's output is printed whole when it ends (in shard order),
 * then one closing line `N passed, N failed` over all of them; the exit code is non-zero if any failed.
 *
 * A dockerd needs the default bridge `docker0`, and there is one per network namespace: run as root, each
 * shard runs in a network namespace of its own (loopback only, removed afterwards), so several shards can
 * each run a dockerd, and no test run adds a bridge to the machine's own network. Without root the shards
 * share the machine's namespace, and only one of them may use Docker.
 * CORENODE_TEST_SHARDS=1 runs everything in one process, in the same order.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Each shard runs in its own network namespace (below), so the areas that start a dockerd (apps, volumes,
// filesync, peers, tenants) can sit in different shards. An entry is an area (a folder) or one test file,
// which its area's shard then leaves out. The suite is bound by CPU, so the shards should end together:
// they are balanced by measured time (CORENODE_TEST_TIMES=1 lists wall and CPU per file). The tenants area
// (about 190 s of wall) is split between the last two shards: in the first one alone, that shard ended
// after 595 s and the others after 402-479.
const SHARDS = [
  // The testbed areas build hosts in network namespaces of their own, from inside this shard's namespace.
  // Here: this shard ended 3-4 minutes before the others without them (591 s run).
  ['test/apps', 'test/contract', 'test/node', 'test/network', 'test/testbed'],
  // The web interface's browser tests (about 3 min of wall, chromium and two nodes) here: the network and
  // testbed areas left this shard, which then had the time to spare.
  ['test/explorer', 'test/volumes', 'test/ui'],
  ['test/deployer', 'test/attack', 'test/cli', 'test/tenants/mounts.test.ts', 'test/tenants/test-installs.test.ts', 'test/tenants/exec-output.test.ts'],
  ['test/peers', 'test/filesync', 'test/core', 'test/daemon', 'test/benchmark', 'test/identity', 'test/explorer/kill.test.ts', 'test/tenants'],
  // The placement scenarios (five hosts with a dockerd each, about 5.5 minutes, most of it waiting out a
  // split and a silent node's 45 s): in shard 1 they made it end minutes after the others.
  ['test/network/placement.test.ts'],
];
const isFile = (entry) => entry.endsWith('.test.ts');
/** Files listed on their own: the shard of their area does not run them. */
const singled = SHARDS.flat().filter(isFile);

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const known = new Set(fs.readdirSync(path.join(root, 'test')).filter((d) => d !== 'support' && fs.statSync(path.join(root, 'test', d)).isDirectory()));
const listed = new Set(SHARDS.flat().filter((a) => !isFile(a)).map((a) => a.slice('test/'.length)));
const missing = [...known].filter((a) => !listed.has(a));
// An area nobody listed still runs: in the last shard.
if (missing.length) SHARDS[SHARDS.length - 1].push(...missing.map((a) => `test/${a}`));

const one = process.env.CORENODE_TEST_SHARDS === '1';
// Several shards each start a dockerd, which needs a namespace of its own: where none can be made (not
// root, no `ip`), everything runs in one shard rather than two dockerds fighting over one `docker0`.
const canNetns = (() => {
  if (process.getuid?.() !== 0 || process.env.CORENODE_TEST_NETNS === '0') return false;
  const probe = `corenode-test-probe-${process.pid}`;
  try {
    execFileSync('ip', ['netns', 'add', probe], { stdio: 'ignore' });
    execFileSync('ip', ['netns', 'del', probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
if (!one && !canNetns) process.stdout.write('no network namespaces here (not root, or no ip): one shard\n');
const shards = (one || !canNetns ? [SHARDS.flat()] : SHARDS).map((areas) => areas.filter((a) => fs.existsSync(path.join(root, a))));
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'corenode-shards-'));
const started = Date.now();
/** The machine's CPU time, busy and all, from /proc/stat (null elsewhere): how much of the cores the run used. */
function machineCpu() {
  try {
    const [, ...f] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
    const t = f.map(Number);
    // user nice system idle iowait irq softirq steal: idle and iowait are not busy; steal is another guest's.
    return { busy: t[0] + t[1] + t[2] + t[5] + t[6], steal: t[7] ?? 0, all: t.slice(0, 8).reduce((a, b) => a + b, 0) };
  } catch {
    return null;
  }
}
const cpuAtStart = machineCpu();

const namespaces = new Set();
// Interrupted (Ctrl-C, CI timeout): remove the namespaces made so far.
process.on('exit', () => {
  for (const n of namespaces) {
    try {
      execFileSync('ip', ['netns', 'del', n], { stdio: 'ignore' });
    } catch {}
  }
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));

/** A fresh network namespace with loopback up, or null where namespaces cannot be made (not root). */
function makeNetns(i) {
  if (!canNetns) return null;
  const name = `corenode-test-${process.pid}-${i}`;
  try {
    execFileSync('ip', ['netns', 'add', name], { stdio: 'ignore' });
    namespaces.add(name);
    execFileSync('ip', ['-n', name, 'link', 'set', 'lo', 'up'], { stdio: 'ignore' });
    return name;
  } catch {
    return null;
  }
}

function run(areas, i) {
  const log = path.join(out, `shard-${i}.log`);
  const fd = fs.openSync(log, 'w');
  const globs = areas.map((a) => (isFile(a) ? a : `${a}/**/*.test.ts`));
  const ignore = singled.filter((f) => !areas.includes(f)).flatMap((f) => ['--ignore', f]);
  const netns = makeNetns(i);
  const mocha = ['npx', '--no-install', 'mocha', ...globs, ...ignore];
  // nsenter rather than `ip netns exec`, which remounts /sys: dockerd then fails to start.
  const [cmd, ...args] = netns ? ['nsenter', `--net=/run/netns/${netns}`, '--', ...mocha] : mocha;
  const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', fd, fd] });
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      fs.closeSync(fd);
      if (netns) {
        try {
          execFileSync('ip', ['netns', 'del', netns], { stdio: 'ignore' });
          namespaces.delete(netns);
        } catch {}
      }
      const text = fs.readFileSync(log, 'utf8');
      const m = [...text.matchAll(/^(\d+) passed, (\d+) failed/gm)].pop();
      resolve({ areas, code: code ?? 1, signal, text, passed: m ? Number(m[1]) : 0, failed: m ? Number(m[2]) : 1, secs: Math.round((Date.now() - started) / 1000) });
    });
  });
}

/**
 * The type check runs beside the shards rather than before them: tsc is one thread, and the shards keep the
 * other core busy meanwhile (before, the second core idled for the check's whole time, about 40 s here).
 * A failed check counts as one failure, with tsc's output as its report.
 */
function typecheck() {
  return new Promise((resolve) => {
    const child = spawn('npx', ['--no-install', 'tsc', '--noEmit', '-p', '.'], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.stderr.on('data', (d) => (text += d));
    child.on('close', (code) => {
      const ok = code === 0;
      text = text.split('\n').filter((l) => !l.startsWith('npm warn')).join('\n');
      resolve({ areas: ['type check (tsc --noEmit)'], code: code ?? 1, signal: null, text: ok ? 'no type errors\n' : `  1 failing\n\n${text}\n`, passed: 0, failed: ok ? 0 : 1, secs: Math.round((Date.now() - started) / 1000) });
    });
  });
}

const results = await Promise.all([...shards.map(run), ...(process.env.CORENODE_TYPECHECK === '0' ? [] : [typecheck()])]);
let passed = 0;
let failed = 0;
for (const r of results) {
  process.stdout.write(`\n===== ${r.areas.join(' ')} (ended after ${r.secs} s, exit ${r.code}${r.signal ? ` ${r.signal}` : ''}) =====\n`);
  process.stdout.write(r.text.replace(/^(\d+) passed, (\d+) failed.*$/gm, '(shard: $1 passed, $2 failed)'));
  passed += r.passed;
  // A shard that died without its summary counts as a failure.
  failed += r.failed + (r.code !== 0 && r.failed === 0 ? 1 : 0);
}
fs.rmSync(out, { recursive: true, force: true });
// CI shows only the tail of the output: repeat each shard's failure report (mocha's "N failing" section,
// or the end of a shard that died) right above the closing line, so a failure is never cut off.
for (const r of results) {
  if (!r.failed && !r.code) continue;
  const at = r.text.search(/^\s+\d+ failing/m);
  const report = at >= 0 ? r.text.slice(at) : r.text.slice(-4000);
  process.stdout.write(`\n===== failures of ${r.areas.join(' ')} =====\n${report.replace(/^(\d+) passed, (\d+) failed.*$/gm, '').slice(0, 12000)}\n`);
}
const cpuAtEnd = machineCpu();
// Whether a run was bound by the cores (busy near 100%) or by waiting (builds, daemons, timers).
const usage =
  cpuAtStart && cpuAtEnd
    ? ` (machine CPU busy ${((100 * (cpuAtEnd.busy - cpuAtStart.busy)) / (cpuAtEnd.all - cpuAtStart.all)).toFixed(0)}% of ${os.cpus().length} cores, stolen ${((100 * (cpuAtEnd.steal - cpuAtStart.steal)) / (cpuAtEnd.all - cpuAtStart.all)).toFixed(0)}%)`
    : '';
process.stdout.write(`\nall shards in ${Math.round((Date.now() - started) / 1000)} s${usage}\n${passed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
