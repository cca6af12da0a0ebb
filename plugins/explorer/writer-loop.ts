/**
 * The message loop of a store's writer thread (`writer-thread.ts` is the store's side): works through the
 * store's requests in order with the store's `Writer`, which owns the write connection.
 *
 * Group commit: runs that queued up while a transaction was being written go in together, as one
 * transaction of whole blocks (up to `rowsPerTransaction` rows), planned as one run: one commit (the larger
 * part of a run's CPU, measured) for several runs, and outputs created and spent among them never written.
 * After each commit the heads of its blocks are reported (`committed`), before the answers of the
 * requests it completed, so the store's kept blocks are current when an `applyBlocks` resolves.
 */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Head } from './kept-blocks.ts';
import { SimulatedDeath, type ParsedBlock, type Tip } from './store.ts';
import type { FromWriter, ToWriter, WriterBase } from './writer-thread.ts';

/** What a store writes with (synchronously, as SQLite, or not, as PostgreSQL). */
export interface Writer {
  /** Plan and write `blocks` (whole blocks on top of `base`) as one transaction; their heads and journal floor. */
  applyRun(blocks: ParsedBlock[], chainHeight: number | undefined, base: Tip | null): { heads: Head[]; floor: number } | Promise<{ heads: Head[]; floor: number }>;
  /** Undo the tip block, which must be `height`; its head. */
  undoTip(height: number, base: Tip | null): Head | Promise<Head>;
  close(): void | Promise<void>;
}

/** How far below the node's thread a writer thread runs (nice values; Linux, see lowerPriority). */
const WRITER_NICE = 10;

/**
 * The index is written in the background: the writer thread runs WRITER_NICE below the thread that started
 * it, so when the cores are all busy the node's thread (requests, the daemon's answers of the next blocks)
 * and the daemon go first, and the writes take what they leave. bench:explorer, SQLite, 4 runs each,
 * alternating: index / fetch 0.85-0.89 at the node's priority, 0.88-0.94 below it. Linux only: there a
 * thread's nice value is its own (setpriority of the calling thread); elsewhere it is the whole process's.
 */
function lowerPriority(): void {
  if (process.platform !== 'linux') return;
  try {
    os.setPriority(Math.min(19, os.getPriority() + WRITER_NICE));
  } catch {
    // Not allowed here (a sandbox): the writes keep the node's priority.
  }
}

/** Serve the store's requests with the writer `open` makes (at the first request that needs it). */
export function serveWriter(open: () => Writer): void {
  const port = parentPort!;
  const data = workerData as WriterBase;
  const post = (m: FromWriter) => port.postMessage(m);
  const failed = (id: number, e: unknown) => post({ op: 'failed', id, message: (e as Error).message ?? String(e), name: (e as Error).name ?? 'Error' });
  // A death the test hook asks for is not answered: it ends the thread (an unhandled rejection does).
  const rethrowDeath = (e: unknown) => {
    if (e instanceof SimulatedDeath) throw e;
  };
  lowerPriority();

  let writer: Writer | null = null;
  const writing = () => (writer ??= open());
  const queue: ToWriter[] = [];
  let draining = false;

  port.on('message', (m: ToWriter) => {
    queue.push(m);
    // Drained once the messages that came while a transaction was written have all arrived: they are grouped.
    if (!draining) {
      draining = true;
      setImmediate(() => void drain());
    }
  });

  async function drain(): Promise<void> {
    while (queue.length) {
      const m = queue[0];
      if (m.op === 'apply') {
        let n = 1;
        while (n < queue.length && queue[n].op === 'apply') n++;
        await applyGroup(queue.splice(0, n) as Extract<ToWriter, { op: 'apply' }>[]);
        continue;
      }
      queue.shift();
      if (m.op === 'close') {
        await writer?.close();
        writer = null;
        queue.length = 0;
        port.close(); // the thread ends; the store waits for its exit
        return;
      }
      try {
        post({ op: 'done', id: m.id, head: await writing().undoTip(m.height, m.base) });
      } catch (e) {
        rethrowDeath(e);
        failed(m.id, e);
      }
    }
    draining = false;
  }

  async function applyGroup(reqs: Extract<ToWriter, { op: 'apply' }>[]): Promise<void> {
    const left = reqs.map((r) => r.blocks.length);
    let answered = 0;
    let chunk: ParsedBlock[] = [];
    let owners: number[] = [];
    let rows = 0;
    let base = reqs[0].base;
    const commit = async () => {
      // The chain's height as the request of the transaction's last block saw it.
      const done = await writing().applyRun(chunk, reqs[owners.at(-1)!].chainHeight, base);
      post({ op: 'committed', ...done });
      const last = chunk.at(-1)!;
      base = { height: last.height, hash: last.hash };
      for (const i of owners) left[i]--;
      while (answered < reqs.length && left[answered] === 0) post({ op: 'done', id: reqs[answered++].id });
      chunk = [];
      owners = [];
      rows = 0;
    };
    try {
      for (let i = 0; i < reqs.length; i++) {
        for (const b of reqs[i].blocks) {
          const n = b.outputs.length + b.spends.length;
          if (chunk.length && rows + n > data.rowsPerTransaction) await commit();
          chunk.push(b);
          owners.push(i);
          rows += n;
        }
      }
      if (chunk.length) await commit();
    } catch (e) {
      rethrowDeath(e);
      // The failed transaction was rolled back. Its requests fail, and so do those queued behind them: each
      // extends the one before, which is not there.
      for (const r of reqs.slice(answered)) failed(r.id, e);
      const later = queue.filter((q) => q.op === 'apply');
      queue.splice(0, queue.length, ...queue.filter((q) => q.op !== 'apply'));
      for (const q of later) failed(q.id, new Error(`an earlier run was not written: ${(e as Error).message}`));
    }
  }
}
