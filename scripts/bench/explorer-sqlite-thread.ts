/**
 * The SQLite store's CPU per run, split by thread: synthetic regtest-sized blocks (20 outputs, 8 spends of
 * outputs of earlier runs, as `explorer-pg-runs.ts`) written through `applyBlocks` in runs of 32, after one
 * warm-up run (the writer thread's start is not a run's cost). CPU times are read from /proc for the node's
 * thread and for the whole process (the rest: the writer thread, and V8's and libuv's helpers), so they do
 * not depend on how busy the machine is, unlike the wall time.
 *
 *   npx tsx scripts/bench/explorer-sqlite-thread.ts [--blocks 4000] [--ahead 1] [--rounds 3]
 *
 * `--ahead N`: runs handed over before the earlier ones are written (N > 1 lets runs queue up in the
 * writer and be committed together, as the scanner does).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteExplorerStore } from '../../plugins/explorer/sqlite-store.ts';
import { regtestSizedBlocks } from './explorer-blocks.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const BLOCKS = Number(arg('blocks', '4000'));
const AHEAD = Number(arg('ahead', '1'));
const ROUNDS = Number(arg('rounds', '3'));
const RUN = Number(arg('run', '32'));

const blocks = regtestSizedBlocks(BLOCKS);

const TICK = 100; // USER_HZ
const mainThreadMs = () => {
  const f = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICK;
};
const processMs = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

console.log(`load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
const rows: { wall: number; main: number; rest: number }[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'xw-sqlite-thread-'));
  try {
    const store = new SqliteExplorerStore(path.join(dir, 'index.sqlite'), { undoDepth: 1000 });
    await store.open();
    await store.applyBlocks(blocks.slice(0, RUN)); // warm-up: the writer thread starts
    const runs = Math.ceil((BLOCKS - RUN) / RUN);
    const m0 = mainThreadMs();
    const p0 = processMs();
    const t0 = performance.now();
    const inFlight: Promise<void>[] = [];
    for (let k = RUN; k < BLOCKS; k += RUN) {
      while (inFlight.length >= AHEAD) await inFlight.shift();
      inFlight.push(store.applyBlocks(blocks.slice(k, k + RUN)));
    }
    await Promise.all(inFlight);
    const wall = performance.now() - t0;
    const main = mainThreadMs() - m0;
    const rest = processMs() - p0 - main;
    rows.push({ wall: wall / runs, main: main / runs, rest: rest / runs });
    console.log(`round ${round + 1}: ${runs} runs of ${RUN} blocks, ${(wall / runs).toFixed(1)} ms a run; CPU a run: node's thread ${(main / runs).toFixed(1)} ms, writer thread and helpers ${(rest / runs).toFixed(1)} ms`);
    await store.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
const pick = (k: 'wall' | 'main' | 'rest', f: (xs: number[]) => number) => f(rows.map((r) => r[k])).toFixed(1);
console.log(
  `best / median of ${ROUNDS}: wall ${pick('wall', (x) => Math.min(...x))} / ${pick('wall', median)} ms a run; node's thread ${pick('main', (x) => Math.min(...x))} / ${pick('main', median)} ms; writer and helpers ${pick('rest', (x) => Math.min(...x))} / ${pick('rest', median)} ms (ahead ${AHEAD}, load ${os.loadavg()[0].toFixed(1)})`,
);
