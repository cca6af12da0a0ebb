/**
 * Bounded lanes of calls: each lane has its own slots and its own waiting line. Issue 11 measured why one
 * shared bound is not enough: 510 concurrent anonymous gettxoutsetinfo filled the 5 slots and 500 places
 * of one line, and the operator's routes and the explorer were refused at once. Public callers now share
 * one lane; the node's own callers and its operator another, which public calls never occupy.
 */
import { RpcError } from './rpc.ts';
import type { LaneSettings } from './config.ts';

export type LaneName = 'public' | 'priority';

export class Lane {
  private running = 0;
  private readonly waiting: { go: () => void; fail: (e: unknown) => void }[] = [];

  constructor(
    readonly name: LaneName,
    private readonly limits: LaneSettings,
    private readonly what: string,
  ) {}

  get inFlight(): number {
    return this.running + this.waiting.length;
  }

  /** Run `fn` when a slot is free; refuse at once when the line is full; leave the line when `signal` aborts. */
  async run<T>(fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    if (this.running >= this.limits.concurrency) {
      if (this.waiting.length >= this.limits.maxQueued)
        throw new RpcError('timeout', 'EBUSY', `The ${this.what} is busy: ${this.inFlight} calls are running or waiting; try again shortly`);
      signal.throwIfAborted();
      await new Promise<void>((go, fail) => {
        const w = { go, fail };
        this.waiting.push(w);
        signal.addEventListener(
          'abort',
          () => {
            const i = this.waiting.indexOf(w);
            if (i >= 0) this.waiting.splice(i, 1), fail(signal.reason);
          },
          { once: true },
        );
      });
    } else this.running++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next.go(); // the slot passes on: `running` stays
      else this.running--;
    }
  }
}
