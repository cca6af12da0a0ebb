/**
 * Read blocks from the daemon in height order while keeping it busy: block hashes in one batch call per
 * window, then `getblock <hash> 2` (every transaction in full, one call per block) with up to `window`
 * blocks requested ahead of the ones being applied. A `getblock` answer larger than the daemon's first
 * write (16,384 bytes) goes on a connection of its own (lib/daemon-rpc, `ownConnection`): from a daemon on
 * this machine, the rest of an answer of 16-80 KB on a kept-alive connection waited 40 ms for a delayed
 * ACK, about 16 times its own time (blocks of about 2.3-12 KB).
 */
import type { RpcClient } from '../daemon/api.ts';
import type { RpcBlock } from './block.ts';

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
    a.p = this.hashOf(h).then((hash) => this.rpc.call<RpcBlock>('getblock', [hash, 2], { signal: this.opts.signal }));
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
