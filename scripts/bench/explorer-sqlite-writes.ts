/**
 * How the embedded store's writes scale with the index size (issue 19: SQLite was not built to 10M because
 * its write-ahead log grew by ~250 MB a transaction). Writes OUTPUTS synthetic outputs, one transaction
 * entry each, through the store's own `applyBlocks` (runs of 32 blocks of 1,000 outputs, random txids and
 * ~9 outputs per address at random, as the explorer benchmark's scale part), and prints per million: the
 * time, the bytes this process wrote to the disk (/proc/self/io: the log and the checkpoints; steady
 * whatever the machine's load, unlike the time) and the size of the file and of its log.
 *
 *   npx tsx scripts/bench/explorer-sqlite-writes.ts [--outputs 2000000] [--cache-mb 256] [--page-size N] [--rows N]
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteExplorerStore } from '../../plugins/explorer/sqlite-store.ts';
import type { ParsedBlock, Utxo } from '../../plugins/explorer/store.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const OUTPUTS = Number(arg('outputs', '2000000'));
const CACHE_MB = Number(arg('cache-mb', '256'));
const PAGE_SIZE = arg('page-size', '');
const ROWS = arg('rows', '');
const PER_BLOCK = 1000;
const RUN = 32;
const ADDRESSES = Math.max(1, Math.floor(OUTPUTS / 9));

const written = () => Number(/write_bytes:\s+(\d+)/.exec(fs.readFileSync('/proc/self/io', 'utf8'))![1]);
const addr = (i: number) => 'rltc1q' + createHash('sha256').update(`a${i}`).digest('hex').slice(0, 36);

function block(h: number, prev: string): ParsedBlock {
  const outputs: Utxo[] = [];
  for (let i = 0; i < PER_BLOCK; i++) {
    const n = h * PER_BLOCK + i;
    if (n >= OUTPUTS) break;
    const address = addr((n * 7919) % ADDRESSES);
    outputs.push({ txid: createHash('sha256').update(`tx${n}`).digest('hex'), vout: 0, address, satoshis: 1000 + (n % 100_000), height: h, scriptPubKey: '0014' + address.slice(6, 46), coinbase: false });
  }
  return { height: h, hash: createHash('sha256').update(`b${h}`).digest('hex'), prev, outputs, spends: [], txCount: outputs.length };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'explorer-sqlite-writes-'));
try {
  const store = new SqliteExplorerStore(path.join(dir, 'index.sqlite'), { undoDepth: 1000, cacheMb: CACHE_MB, pageSize: PAGE_SIZE ? Number(PAGE_SIZE) : undefined, rowsPerTransaction: ROWS ? Number(ROWS) : undefined });
  await store.open();
  const blocks = Math.ceil(OUTPUTS / PER_BLOCK);
  let prev = '';
  let t = performance.now();
  let w = written();
  const t0 = t;
  const w0 = w;
  let nextMillion = 1_000_000;
  for (let h = 0; h < blocks; h += RUN) {
    const run: ParsedBlock[] = [];
    for (let k = h; k < Math.min(h + RUN, blocks); k++) {
      const b = block(k, prev);
      prev = b.hash;
      run.push(b);
    }
    await store.applyBlocks(run);
    const done = Math.min(h + RUN, blocks) * PER_BLOCK;
    if (done >= nextMillion || h + RUN >= blocks) {
      const now = performance.now();
      const wn = written();
      const wal = fs.existsSync(store.file + '-wal') ? fs.statSync(store.file + '-wal').size : 0;
      console.log(
        `${(done / 1e6).toFixed(1)}M: this million ${((now - t) / 1000).toFixed(1)} s (${Math.round(1e6 / ((now - t) / 1000))} outputs/s), ${((wn - w) / 1e6).toFixed(0)} bytes written per output; file ${(fs.statSync(store.file).size / 2 ** 20).toFixed(0)} MB, log ${(wal / 2 ** 20).toFixed(0)} MB; load ${os.loadavg()[0].toFixed(1)}`,
      );
      t = now;
      w = wn;
      nextMillion += 1_000_000;
    }
  }
  console.log(`total: ${((performance.now() - t0) / 1000).toFixed(1)} s, ${Math.round(OUTPUTS / ((performance.now() - t0) / 1000))} outputs/s, ${((written() - w0) / OUTPUTS).toFixed(0)} bytes written per output`);
  await store.close();
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
