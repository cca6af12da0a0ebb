/**
 * The block scanner: from the configured start height it applies every block the daemon has, then polls
 * for new ones. Before going on it checks that the daemon still holds the last indexed block; when not
 * (a reorganisation), it walks back to the highest height where both agree and undoes the blocks above.
 * Stopping finishes the block in hand and nothing more.
 */
import { setMaxListeners } from 'node:events';
import { RpcError, type RpcClient } from '../daemon/api.ts';
import { parseBlock } from './block.ts';
import { BlockFetcher } from './fetch.ts';
import { IndexInconsistentError, blockRows, type ExplorerStore, type ParsedBlock } from './store.ts';

export interface ScannerLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface ScannerOptions {
  startHeight: number;
  /** Wait between tip polls once caught up. */
  pollMs: number;
  /** Wait after a failure (daemon down, bad answer) before trying again. */
  retryMs: number;
  /** Blocks fetched ahead of the one being applied. */
  prefetch: number;
  /** Rows (outputs and spends) gathered into one run while catching up (default BATCH_ROWS). */
  batchRows?: number;
  /** While catching up, a run gathered for this long is written even when smaller (default BATCH_MS). For tests. */
  batchMs?: number;
  /** The smallest run handed over early near the end of a catch-up (default TAIL_MIN_ROWS). For tests. */
  tailMinRows?: number;
  log: ScannerLog;
}

/** Rows a run gathers while catching up, by default: as many as the SQLite writer puts in one transaction. */
export const BATCH_ROWS = 20_000;
/** While catching up, a run gathered for this long is written even when smaller than `batchRows`. */
const BATCH_MS = 1000;
/** The smallest run handed over early near the end of a catch-up (see `step`). */
const TAIL_MIN_ROWS = 500;

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });

const unlimited = () => {
  const ac = new AbortController();
  setMaxListeners(0, ac.signal);
  return ac.signal;
};

/** The daemon's chain changed under a call (a height gone, a block unknown): look again at once. */
const chainMoved = (e: unknown) => e instanceof RpcError && e.kind === 'rpc' && (e.code === -8 || e.code === -5);

export class Scanner {
  /** Blocks and transactions applied since this scanner was made. */
  readonly stats = { blocks: 0, txs: 0, reorgs: 0, undone: 0 };
  /**
   * Where catching up spends its time (ms): waiting for blocks, parsing them, waiting for the store (of which
   * `tailMs` after the last block came: the runs still being written then). The benchmark prints it.
   */
  readonly timing = { waitMs: 0, parseMs: 0, writeMs: 0, tailMs: 0 };
  lastError: string | null = null;
  /** The daemon's height at the last poll. */
  daemonHeight: number | null = null;
  private loop: Promise<void> | null = null;
  private ac: AbortController | null = null;
  private opened = false;
  private waitingLogged = false;

  constructor(
    private readonly rpc: RpcClient,
    readonly store: ExplorerStore,
    private readonly opts: ScannerOptions,
  ) {}

  get running(): boolean {
    return this.loop !== null;
  }

  /** Start following the daemon in the background (no effect when running). */
  start(): void {
    if (this.loop) return;
    const ac = new AbortController();
    setMaxListeners(0, ac.signal); // every look-ahead RPC listens to it
    this.ac = ac;
    this.loop = this.run(ac.signal).finally(() => {
      if (this.ac === ac) {
        this.ac = null;
        this.loop = null;
      }
    });
  }

  /** Stop after the block being applied; resolves once stopped. */
  async stop(): Promise<void> {
    const loop = this.loop;
    this.ac?.abort();
    await loop;
  }

  /** Open the store (an index found inconsistent is dropped, to be rebuilt). */
  async open(): Promise<void> {
    await this.guard(() => this.ensureOpen());
  }

  /** Open the store (recovery) once, then bring the index to the daemon's tip; returns the scanned tip height. */
  async catchUp(signal: AbortSignal = unlimited()): Promise<number | null> {
    await this.ensureOpen();
    for (;;) {
      try {
        if (!(await this.step(signal)) || signal.aborted) break;
      } catch (e) {
        if (chainMoved(e)) continue;
        this.opened = false; // see guard()
        throw e;
      }
    }
    return this.store.tip()?.height ?? null;
  }

  /** Undo down to `height` (exactly when the undo records reach, else rebuild from the start height). */
  async rollbackTo(height: number): Promise<void> {
    return this.guard(() => this.undoTo(height));
  }

  async drop(): Promise<void> {
    return this.guard(async () => {
      await this.ensureOpen();
      await this.store.drop();
    });
  }

  /** A failed write may leave a run half-applied in memory: the next use opens the store again (recovery). */
  private async guard<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      this.opened = false;
      throw e;
    }
  }

  private async undoTo(height: number): Promise<void> {
    await this.ensureOpen();
    const low = this.store.lowestUndoTarget();
    if (low === null || height < low) {
      this.opts.log.warn({ height, lowest: low }, 'explorer: rescan below the kept undo records; rebuilding from the start height');
      await this.store.drop();
      return;
    }
    while ((this.store.tip()?.height ?? -Infinity) > height) {
      await this.store.undoTip();
      this.stats.undone++;
    }
  }

  private async ensureOpen(): Promise<void> {
    if (this.opened) return;
    try {
      await this.store.open();
    } catch (e) {
      if (!(e instanceof IndexInconsistentError)) throw e;
      this.opts.log.error({ err: e.message }, 'explorer: index inconsistent; rebuilding from the start height');
      await this.store.drop();
    }
    this.opened = true;
  }

  private async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.ensureOpen();
        const moved = await this.step(signal);
        this.lastError = null;
        if (!moved) await sleep(this.opts.pollMs, signal);
      } catch (e) {
        if (signal.aborted) break;
        if (chainMoved(e)) continue;
        this.lastError = (e as Error).message;
        this.opts.log.warn({ err: this.lastError }, 'explorer: block processing failed; retrying');
        // A failed write may leave a block half-applied in memory: open again runs the recovery.
        this.opened = false;
        await sleep(this.opts.retryMs, signal);
      }
    }
  }

  /** One look at the daemon: roll back a reorganisation or apply what is new. False when nothing to do. */
  private async step(signal: AbortSignal): Promise<boolean> {
    const count = await this.rpc.call<number>('getblockcount', [], { signal });
    this.daemonHeight = count;
    const tip = this.store.tip();
    if (tip && tip.height >= 0) {
      if (tip.height > count && (await this.daemonCatchingUp(count, signal))) return false;
      const theirs = tip.height <= count ? await this.rpc.call<string>('getblockhash', [tip.height], { signal }) : null;
      if (theirs !== tip.hash) {
        await this.rollback(count, signal);
        return true;
      }
    }
    this.waitingLogged = false;
    const from = tip ? tip.height + 1 : this.opts.startHeight;
    if (from > count) return false;
    const fetcher = new BlockFetcher(this.rpc, from, count, { window: this.opts.prefetch, signal });
    // Runs are written while the next are fetched and parsed: PostgreSQL writes in its server, SQLite in its
    // writer thread, so the two overlap (measured: the scanner waited on the store for 0.6 of its time when
    // it wrote and then fetched). The store says how many rows it takes before the earlier are written.
    const rowsAhead = this.store.rowsAhead ?? 0;
    const writing: { done: Promise<void>; rows: number }[] = [];
    let rowsInFlight = 0;
    let expect = this.store.tip();
    // While catching up, blocks are gathered into runs of up to `batchRows` rows (or what came in BATCH_MS):
    // a store's commit costs it about the pages the transaction dirtied, and those are shared by more rows in
    // a larger one (SQLite's writer: 0.78 ms of CPU a regtest block in runs of 32 blocks, 0.32 ms in runs of
    // 512); at the tip a step's few blocks are one run, written at once.
    let run: ParsedBlock[] = [];
    let runRows = 0;
    let runStarted = 0;
    /** Rows and blocks gathered in this step: the rows a block of the rest is expected to have. */
    let stepRows = 0;
    let stepBlocks = 0;
    const handOver = async () => {
      if (!run.length) return;
      const blocks = run;
      const rows = runRows;
      run = [];
      runRows = 0;
      const t = performance.now();
      // At most `rowsAhead` rows in flight besides this run; a failed run stops the step here (the store's
      // tip is its last whole run).
      while (writing.length && rowsInFlight + rows > rowsAhead) {
        const w = writing.shift()!;
        rowsInFlight -= w.rows;
        await w.done;
      }
      this.timing.writeMs += performance.now() - t;
      const last = blocks.at(-1)!;
      const w = this.store.applyBlocks(blocks, count).then(() => {
        if (Math.floor(last.height / 1000) > Math.floor((blocks[0].height - 1) / 1000)) this.opts.log.info({ height: last.height, daemonHeight: count }, 'explorer: indexing');
        for (const b of blocks) this.stats.txs += b.txCount;
        this.stats.blocks += blocks.length;
      });
      // Handled where it is awaited; this keeps a failure meanwhile from counting as unhandled.
      w.catch(() => {});
      writing.push({ done: w, rows });
      rowsInFlight += rows;
    };
    let error: unknown = null;
    try {
      for (;;) {
        // A take waits for a quarter of the look-ahead: the block data would not be there sooner anyway.
        const t0 = performance.now();
        const raws = await fetcher.take(this.opts.prefetch, Math.max(1, Math.floor(this.opts.prefetch / 4)));
        if (!raws.length) break;
        const t1 = performance.now();
        const blocks = raws.map(parseBlock);
        this.timing.waitMs += t1 - t0;
        this.timing.parseMs += performance.now() - t1;
        let moved = false;
        for (const b of blocks) {
          // The chain moved while fetching ahead: stop there, the next step finds the fork.
          if (expect && (b.prev !== expect.hash || b.height !== expect.height + 1)) {
            moved = true;
            break;
          }
          expect = { height: b.height, hash: b.hash };
          const n = blockRows(b);
          if (run.length && runRows + n > (this.opts.batchRows ?? BATCH_ROWS)) await handOver();
          if (!run.length) runStarted = performance.now();
          run.push(b);
          runRows += n;
          stepRows += n;
          stepBlocks++;
          // Near the end of the blocks there are to fetch, a run goes as soon as it holds as many rows as the
          // rest is expected to, so it is written while the rest is fetched: the runs shrink by halves towards
          // the end. The last run of a catch-up was written after the last block came, with nothing left to
          // overlap it: 0.04-0.05 of a bench:explorer round of 4,000 blocks on SQLite, 0.05-0.08 on PostgreSQL.
          if (b.height < count && runRows >= (this.opts.tailMinRows ?? TAIL_MIN_ROWS) && runRows >= (count - b.height) * (stepRows / stepBlocks)) await handOver();
        }
        if (moved || signal.aborted) break;
        if (performance.now() - runStarted >= (this.opts.batchMs ?? BATCH_MS)) await handOver();
      }
    } catch (e) {
      error = e;
    }
    // What was gathered is whole blocks on top of the runs before it: written even when a fetch failed.
    const tail = performance.now();
    try {
      await handOver();
    } catch (e) {
      error ??= e;
    }
    // Every run handed over is answered before the step ends; the first failure is the step's.
    const t = performance.now();
    const results = await Promise.allSettled(writing.map((w) => w.done));
    this.timing.writeMs += performance.now() - t;
    this.timing.tailMs += performance.now() - tail;
    const failed = results.find((r) => r.status === 'rejected');
    if (error !== null || failed) throw error ?? (failed as PromiseRejectedResult).reason;
    return true;
  }

  /**
   * The daemon is below the index on the same branch and still loading its chain (initial download, a
   * reindex): wait for it rather than undo what it will have again.
   */
  private async daemonCatchingUp(count: number, signal: AbortSignal): Promise<boolean> {
    const info = await this.rpc.call<{ initialblockdownload?: boolean; headers?: number; blocks?: number }>('getblockchaininfo', [], { signal });
    if (info.initialblockdownload !== true && (info.headers ?? 0) <= (info.blocks ?? count)) return false;
    // Loading, but a different block where both have one is a different chain, not a late one.
    const ours = this.store.hashAt(count);
    if (ours !== null && ours !== (await this.rpc.call<string>('getblockhash', [count], { signal }))) return false;
    if (!this.waitingLogged) this.opts.log.info({ explorerHeight: this.store.tip()!.height, daemonHeight: count }, 'explorer: the daemon is behind the index and loading its chain; waiting');
    this.waitingLogged = true;
    return true;
  }

  /** Walk back to the highest height where the index and the daemon hold the same block; undo above it. */
  private async rollback(count: number, signal: AbortSignal): Promise<void> {
    const tip = this.store.tip()!;
    const low = this.store.lowestUndoTarget();
    let h = tip.height;
    for (;;) {
      if (low === null || h < low) {
        this.opts.log.error({ tip: tip.height, lowest: low }, 'explorer: reorganisation deeper than the kept undo records; rebuilding');
        await this.store.drop();
        return;
      }
      const ours = this.store.hashAt(h);
      const theirs = h >= 0 && h <= count ? await this.rpc.call<string>('getblockhash', [h], { signal }) : null;
      if (ours !== null && ours === theirs) break;
      h--;
    }
    this.stats.reorgs++;
    this.opts.log.info({ from: tip.height, fork: h }, 'explorer: reorganisation; undoing blocks above the fork');
    while (this.store.tip()!.height > h) {
      await this.store.undoTip();
      this.stats.undone++;
    }
  }
}
