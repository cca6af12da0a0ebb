#!/usr/bin/env node
/**
 * `npm test` with no arguments: the test areas in a few concurrent mocha processes. The tests spend most of
 * their time waiting on real daemons, Docker, git builds and child nodes rather than computing, so areas
 * that share nothing run side by side. Each shard's output is printed whole when it ends (in shard order),
 * then one closing line `N passed, N failed` over all of them; the exit code is non-zero if any failed.
 *
 * Shards hold areas that must not overlap: only one runs Docker (one default bridge per machine).
 * CORENODE_TEST_SHARDS=1 runs everything in one process, in the same order.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// Balanced by measured wall time on an otherwise idle 2-core machine (about 290, 190 and 340 s before
// test/attack moved to the second shard).
const SHARDS = [
  ['test/apps', 'test/volumes', 'test/explorer'],
  ['test/deployer', 'test/identity', 'test/attack'],
  ['test/core', 'test/cli', 'test/node', 'test/contract', 'test/daemon', 'test/benchmark'],
];

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const known = new Set(fs.readdirSync(path.join(root, 'test')).filter((d) => d !== 'support' && fs.statSync(path.join(root, 'test', d)).isDirectory()));
const listed = new Set(SHARDS.flat().map((a) => a.slice('test/'.length)));
const missing = [...known].filter((a) => !listed.has(a));
// An area nobody listed still runs: in the last shard.
if (missing.length) SHARDS[SHARDS.length - 1].push(...missing.map((a) => `test/${a}`));

const one = process.env.CORENODE_TEST_SHARDS === '1';
const shards = (one ? [SHARDS.flat()] : SHARDS).map((areas) => areas.filter((a) => fs.existsSync(path.join(root, a))));
const out = fs.mkdtempSync(path.join(os.tmpdir(), 'corenode-shards-'));
const started = Date.now();

function run(areas, i) {
  const log = path.join(out, `shard-${i}.log`);
  const fd = fs.openSync(log, 'w');
  const globs = areas.map((a) => `${a}/**/*.test.ts`);
  const child = spawn('npx', ['--no-install', 'mocha', ...globs], { cwd: root, stdio: ['ignore', fd, fd] });
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      fs.closeSync(fd);
      const text = fs.readFileSync(log, 'utf8');
      const m = [...text.matchAll(/^(\d+) passed, (\d+) failed/gm)].pop();
      resolve({ areas, code: code ?? 1, signal, text, passed: m ? Number(m[1]) : 0, failed: m ? Number(m[2]) : 1, secs: Math.round((Date.now() - started) / 1000) });
    });
  });
}

const results = await Promise.all(shards.map(run));
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
process.stdout.write(`\nall shards in ${Math.round((Date.now() - started) / 1000)} s\n${passed} passed, ${failed} failed\n`);
process.exit(failed ? 1 : 0);
