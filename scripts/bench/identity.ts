/**
 * `npm run bench:identity`: how long the event loop is held while 60,000 expired records are purged (issue
 * 11: one nedb `remove` of 60,000 held it 0.9 to 2.7 s). Baseline, measured in the same run on the same
 * records: the store as the plugin kept it before (indexed on expiredAt) and that single
 * `remove({expiredAt: {$lte: now}}, {multi: true})`. Measured: the store as the plugin keeps it now (unique
 * index on loginPhrase only) and its purge (`removeIn`: rows picked from memory, removed 100 at a time,
 * yielding between batches). Prints the longest block of each (the largest gap between 1 ms timer ticks)
 * and the total time.
 *
 * Then start-up: the time for a node (core, host and identity manifests, in this process) to set up with
 * 10,000 and 30,000 stored sessions, against the same node with an empty data folder.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import NeDB from 'nedb-promises';
import { removeIn } from '../../plugins/identity/purge.ts';
import { newPhrase } from '../../plugins/identity/phrases.ts';
import { REPO_ROOT, resolveConfig } from '../../core/config.ts';
import { Host } from '../../core/host.ts';

const N = Number(process.env.BENCH_RECORDS ?? 60_000);

async function freshStore(dir: string, before: boolean) {
  const file = path.join(dir, `signatures-${Math.random().toString(36).slice(2)}.db`);
  const now = Date.now();
  const lines = Array.from({ length: N }, (_, i) =>
    JSON.stringify({ _id: `s${i}`, sigDigest: 'ab'.repeat(32), identifier: '1BenchXXXXXXXXXXXXXXXXXXXXXXXXXXX', loginPhrase: `${now}${String(i).padStart(43, '0')}`, createdAt: now - 900_000 - i, expiredAt: now - 1 - i }),
  );
  fs.writeFileSync(file, lines.join('\n') + '\n');
  const ds = NeDB.create({ filename: file });
  // Loaded before the measurement starts (loading is not purging).
  await ds.load();
  await ds.ensureIndex({ fieldName: 'loginPhrase', unique: true });
  if (before) await ds.ensureIndex({ fieldName: 'expiredAt' });
  return { ds, phrases: lines.map((_, i) => `${now}${String(i).padStart(43, '0')}`) };
}

/** Run `work` while a 1 ms timer measures the longest gap between its ticks. */
async function longestBlock(work: () => Promise<unknown>): Promise<{ blockMs: number; totalMs: number }> {
  let last = performance.now();
  let blockMs = 0;
  const timer = setInterval(() => {
    const t = performance.now();
    blockMs = Math.max(blockMs, t - last);
    last = t;
  }, 1);
  const t0 = performance.now();
  await work();
  const totalMs = performance.now() - t0;
  clearInterval(timer);
  blockMs = Math.max(blockMs, performance.now() - last);
  return { blockMs, totalMs };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'identity-bench-'));
try {
  const a = await freshStore(dir, true);
  const single = await longestBlock(() => a.ds.remove({ expiredAt: { $lte: Date.now() } }, { multi: true }));
  const b = await freshStore(dir, false);
  const batched = await longestBlock(() => removeIn(b.ds, 'loginPhrase', b.phrases));
  const f = (x: number) => x.toFixed(1).padStart(8);
  console.log(`purge of ${N.toLocaleString('en')} expired records (file-backed nedb store)`);
  console.log(`  one remove (baseline):     longest block ${f(single.blockMs)} ms, total ${f(single.totalMs)} ms`);
  console.log(`  identity purge (batched):  longest block ${f(batched.blockMs)} ms, total ${f(batched.totalMs)} ms`);
  console.log(`  longest block, batched / baseline: ${(batched.blockMs / single.blockMs).toFixed(3)}; total time ratio ${(batched.totalMs / single.totalMs).toFixed(2)}`);

  const manifests = path.join(dir, 'manifests');
  fs.mkdirSync(manifests);
  for (const f of ['core.yaml', 'host.yaml', 'identity.yaml']) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', f), path.join(manifests, f));
  const startMs = async (sessions: number) => {
    const dataDir = path.join(dir, `data-${sessions}`);
    fs.mkdirSync(path.join(dataDir, 'identity'), { recursive: true });
    const now = Date.now();
    const key = Buffer.alloc(32, 7);
    const rows = Array.from({ length: sessions }, (_, i) =>
      JSON.stringify({ _id: `s${i}`, legacyid: `1Bench${String(i).padStart(28, 'x')}`, loginPhrase: newPhrase(now - 60_000 + i, key), sigDigest: 'ab'.repeat(32), createdAt: now - 60_000 + i, expireAt: now + 1e9 }),
    );
    fs.writeFileSync(path.join(dataDir, 'identity', 'sessions.db'), rows.join('\n') + (rows.length ? '\n' : ''));
    const config = resolveConfig({ dataDir, manifestsDir: manifests, log: { level: 'silent' }, watch: false }, 'bench');
    const t0 = performance.now();
    const host = new Host({ config });
    await host.start();
    const ms = performance.now() - t0;
    await host.close();
    return ms;
  };
  await startMs(0); // warm the module cache
  const empty = await startMs(0);
  console.log(`start-up of a node (core + identity), in process`);
  console.log(`  empty data folder (baseline):  ${f(empty)} ms`);
  for (const n of [10_000, 30_000]) {
    const ms = await startMs(n);
    console.log(`  ${n.toLocaleString('en').padStart(6)} stored sessions:        ${f(ms)} ms  (${(ms / empty).toFixed(1)}x)`);
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
