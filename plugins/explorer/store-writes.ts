/**
 * A store's writes as the node's thread sees them, the same for both stores: runs handed to the writer
 * thread in order, each checked to extend the one before it (or the kept tip) before it crosses; the kept
 * blocks moved by what the thread reports committed; an undo only once every run handed over is answered.
 * The thread starts at the first write: a node that only serves reads never starts it.
 */
import type { KeptBlocks } from './kept-blocks.ts';
import { assertExtends } from './plan.ts';
import type { ParsedBlock, Tip } from './store.ts';
import { WriterThread, type WriterBase, type WriterEntry } from './writer-thread.ts';

export class StoreWrites {
  private writer: WriterThread | null = null;
  /** The tip once every run handed over is written (undefined: none in flight, the kept tip). */
  private sentTip: Tip | null | undefined;
  /** Runs handed over and not yet answered. */
  private readonly inFlight = new Set<Promise<unknown>>();

  /**
   * `start`: how to start a writer thread now (throws when the store is not open); `died`: called when one
   * ends unasked, after the runs in hand failed (the store may reread its tip).
   */
  constructor(
    private readonly kept: KeptBlocks,
    private readonly start: () => { entry: WriterEntry; data: WriterBase },
    private readonly died: () => void,
  ) {}

  private thread(): WriterThread {
    if (this.writer?.alive) return this.writer;
    const { entry, data } = this.start();
    const w = new WriterThread(
      entry,
      data,
      (heads, floor) => this.kept.applied(heads, floor),
      () => {
        if (this.writer === w) this.writer = null;
        this.sentTip = undefined;
        this.died();
      },
    );
    this.writer = w;
    return w;
  }

  /** Hand `blocks` over; resolves once they are committed. */
  async apply(blocks: ParsedBlock[], chainHeight?: number): Promise<void> {
    if (!blocks.length) return;
    const base = this.sentTip === undefined ? this.kept.tip() : this.sentTip;
    assertExtends(base, blocks);
    const last = blocks.at(-1)!;
    const p = this.thread().request({ op: 'apply', blocks, chainHeight, base });
    this.sentTip = { height: last.height, hash: last.hash };
    this.inFlight.add(p);
    try {
      await p;
    } catch (e) {
      this.sentTip = undefined;
      throw e;
    } finally {
      this.inFlight.delete(p);
      if (!this.inFlight.size) this.sentTip = undefined;
    }
  }

  /** Every run handed over answered (written or failed). */
  private async settled(): Promise<void> {
    while (this.inFlight.size) await Promise.allSettled([...this.inFlight]);
  }

  /** Undo the tip block exactly, after the runs in flight. */
  async undo(): Promise<void> {
    await this.settled();
    const tip = this.kept.undoable();
    const head = (await this.thread().request({ op: 'undo', height: tip.height, base: tip }))!;
    this.kept.undone(head);
  }

  /** Let the writer finish what it was asked and end; the next write starts a new one. */
  async stop(): Promise<void> {
    const w = this.writer;
    this.writer = null;
    await w?.close();
    await this.settled();
    this.sentTip = undefined;
  }
}
