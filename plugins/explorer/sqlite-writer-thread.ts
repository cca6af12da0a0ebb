/**
 * The SQLite store's writer thread (node:worker_threads): owns the index's write connection
 * (`SqliteWriter`) and works through the store's requests in order. The node's thread meanwhile fetches
 * and parses the next blocks, and answers reads from its own connection (WAL: a reader sees the last
 * commit, never half a run).
 *
 * Group commit: runs that queued up while a transaction was being written go in together, as one
 * transaction of whole blocks (up to `rowsPerTransaction` rows), planned as one run: one commit (the larger
 * part of a run's CPU, measured) for several runs, and outputs created and spent among them never written.
 * After each commit the heads of its blocks are reported (`committed`), before the answers of the
 * requests it completed, so the store's kept blocks are current when an `applyBlocks` resolves.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Head } from './kept-blocks.ts';
import { SqliteWriter, type WriterOptions } from './sqlite-writer.ts';
import { SimulatedDeath, type ParsedBlock } from './store.ts';

export interface WriterData extends WriterOptions {
  file: string;
  rowsPerTransaction: number;
}

export type ToWriter = { id: number; op: 'apply'; blocks: ParsedBlock[]; chainHeight?: number } | { id: number; op: 'undo'; height: number } | { id: number; op: 'close' };
export type FromWriter =
  | { op: 'committed'; heads: Head[]; floor: number }
  | { op: 'done'; id: number; head?: Head }
  | { op: 'failed'; id: number; message: string; name: string };

const port = parentPort!;
const data = workerData as WriterData;
const post = (m: FromWriter) => port.postMessage(m);
const failed = (id: number, e: unknown) => post({ op: 'failed', id, message: (e as Error).message ?? String(e), name: (e as Error).name ?? 'Error' });

let writer: SqliteWriter | null = null;
const queue: ToWriter[] = [];
let scheduled = false;

port.on('message', (m: ToWriter) => {
  queue.push(m);
  // Drained once the messages that came while a transaction was written have all arrived: they are grouped.
  if (!scheduled) {
    scheduled = true;
    setImmediate(drain);
  }
});

function drain(): void {
  scheduled = false;
  while (queue.length) {
    const m = queue[0];
    if (m.op === 'apply') {
      let n = 1;
      while (n < queue.length && queue[n].op === 'apply') n++;
      applyGroup(queue.splice(0, n) as Extract<ToWriter, { op: 'apply' }>[]);
      continue;
    }
    queue.shift();
    if (m.op === 'close') {
      writer?.close();
      writer = null;
      queue.length = 0;
      port.close(); // the thread ends; the store waits for its exit
      return;
    }
    try {
      post({ op: 'done', id: m.id, head: open().undoTip(m.height) });
    } catch (e) {
      if (e instanceof SimulatedDeath) throw e;
      failed(m.id, e);
    }
  }
}

function open(): SqliteWriter {
  writer ??= new SqliteWriter(data.file, data);
  return writer;
}

function applyGroup(reqs: Extract<ToWriter, { op: 'apply' }>[]): void {
  const left = reqs.map((r) => r.blocks.length);
  let answered = 0;
  let chunk: ParsedBlock[] = [];
  let owners: number[] = [];
  let rows = 0;
  const commit = () => {
    // The chain's height as the request of the transaction's last block saw it.
    post({ op: 'committed', ...open().applyRun(chunk, reqs[owners.at(-1)!].chainHeight) });
    for (const i of owners) left[i]--;
    while (answered < reqs.length && left[answered] === 0) post({ op: 'done', id: reqs[answered++].id });
    chunk = [];
    owners = [];
    rows = 0;
  };
  try {
    reqs.forEach((r, i) => {
      for (const b of r.blocks) {
        const n = b.outputs.length + b.spends.length;
        if (chunk.length && rows + n > data.rowsPerTransaction) commit();
        chunk.push(b);
        owners.push(i);
        rows += n;
      }
    });
    if (chunk.length) commit();
  } catch (e) {
    if (e instanceof SimulatedDeath) throw e;
    // The failed transaction was rolled back. Its requests fail, and so do those queued behind them: each
    // extends the one before, which is not there.
    for (const r of reqs.slice(answered)) failed(r.id, e);
    const later = queue.filter((q) => q.op === 'apply');
    queue.splice(0, queue.length, ...queue.filter((q) => q.op !== 'apply'));
    for (const q of later) failed(q.id, new Error(`an earlier run was not written: ${(e as Error).message}`));
  }
}
