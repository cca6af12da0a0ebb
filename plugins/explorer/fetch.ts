/**
 * Read blocks from the daemon in height order while keeping it busy: block hashes in one batch call per
 * window, then `getblock <hash> 2` (every transaction in full, one call per block) with up to `window`
 * blocks requested ahead of the ones being applied. Once blocks are large enough for their answer to pass
 * 16 KB, each is asked for on a connection of its own (`ownConnection`: on a kept-alive connection to a
 * daemon on this machine such an answer waited 40 ms for a delayed ACK, about 16 times its own time).
 */
import type { RpcClient } from '../daemon/api.ts';
import type { RpcBlock } from './block.ts';

/**
 * Serialized block bytes from which its `getblock <hash> 2` answer may pass 16 KB: the answer was 6.5 to 7.3
 * times the block for regtest payment blocks of 0.5 to 3 KB (measured), and up to 9 leaves room for blocks
 * of more outputs than inputs (an output is written with its script, asm, type and address).
 */
export const OWN_CONNECTION_FROM = 1800;

/** Whether the next block is asked for on a connection of its own, after a block of `size` bytes. */
export const ownConnectionAfter = (size: number | undefined) => (size ?? 0) >= OWN_CONNECTION_FROM;

export interface FetchOptions {
  /** Blocks requested ahead of the consumer. */
  window: number;
  signal?: AbortSignal;
}

interface Ahead {
  p: Promise<RpcBlock>;
  settled: boolean;
  ok: boolean;
}

export class BlockFetcher {
  private readonly window: number;
  private readonly chunks = new Map<number, Promise<string[]>>();
  private readonly ahead: Ahead[] = [];
  private next: number;
  /**
   * Set by the size of the last block that arrived. Until one has, on: the window's first requests would
   * otherwise all wait 40 ms when blocks are mid-sized, and a small block costs 0.1-0.4 ms more on its own.
   */
  private ownConnection = true;

  constructor(
    private readonly rpc: RpcClient,
    private readonly from: number,
    private readonly to: number,
    private readonly opts: FetchOptions,
  ) {
    this.window = Math.max(1, opts.window);
    this.next = from;
    this.fill();
  }

  /**
   * The next `min` blocks (fewer when fewer are left to fetch) and those after them that have already
   * arrived (at most `max` in all); [] when done.
   */
  async take(max = 1, min = 1): Promise<RpcBlock[]> {
    if (!this.ahead.length) return [];
    const out = [await this.ahead.shift()!.p];
    while (out.length < Math.min(min, max) && this.ahead.length) {
      this.fill();
      out.push(await this.ahead.shift()!.p);
    }
    while (out.length < max && this.ahead.length && this.ahead[0].settled && this.ahead[0].ok) out.push(await this.ahead.shift()!.p);
    this.fill();
    return out;
  }

  private fill(): void {
    while (this.next <= this.to && this.ahead.length < this.window) this.ahead.push(this.request(this.next++));
  }

  private request(h: number): Ahead {
    const a: Ahead = { p: undefined as never, settled: false, ok: false };
    a.p = this.hashOf(h)
      .then((hash) => this.rpc.call<RpcBlock>('getblock', [hash, 2], { signal: this.opts.signal, ownConnection: this.ownConnection }))
      .then((b) => ((this.ownConnection = ownConnectionAfter(b?.size)), b));
    // Abandoned look-aheads (stop, reorg) must not surface as unhandled rejections.
    a.p.then(
      () => ((a.settled = true), (a.ok = true)),
      () => (a.settled = true),
    );
    return a;
  }

  private hashOf(h: number): Promise<string> {
    const start = this.from + Math.floor((h - this.from) / this.window) * this.window;
    let chunk = this.chunks.get(start);
    if (!chunk) {
      const heights: number[] = [];
      for (let x = start; x <= Math.min(this.to, start + this.window - 1); x++) heights.push(x);
      chunk = this.rpc.batch(heights.map((x) => ({ method: 'getblockhash', params: [x] })), { signal: this.opts.signal }).then((res) =>
        res.map((r) => {
          if (r instanceof Error) throw r;
          return r as string;
        }),
      );
      chunk.catch(() => {});
      this.chunks.set(start, chunk);
      this.chunks.delete(start - 2 * this.window);
    }
    return chunk.then((hs) => hs[h - start]);
  }
}
