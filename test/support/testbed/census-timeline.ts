/**
 * The census of every app (app-census.ts), taken every `everyMs` from every node and kept: a test waits on
 * it (one poll for all its waits, not one per wait) and the placement figures read from it afterwards (when
 * a count was first reached, the largest count between two moments). Two calls per node per sample, one of
 * them a container list on the node's dockerd: at 1 s and five nodes, ten requests a second.
 */
import { censusIn, snapshot, type Census, type Snapshot } from './app-census.ts';
import type { TestbedNode } from './index.ts';

export interface Seen {
  at: number;
  census: Census;
}

export class CensusTimeline {
  readonly samples: Snapshot[] = [];
  private stopped = false;
  private wake: (() => void)[] = [];
  private readonly loop: Promise<void>;

  constructor(
    private readonly nodes: readonly TestbedNode[],
    private readonly everyMs = 1000,
  ) {
    this.loop = this.run();
  }

  private async run() {
    while (!this.stopped) {
      const started = Date.now();
      this.samples.push(await snapshot(this.nodes));
      for (const w of this.wake.splice(0)) w();
      await new Promise((r) => setTimeout(r, Math.max(0, this.everyMs - (Date.now() - started))));
    }
  }

  private next(): Promise<void> {
    return new Promise((r) => this.wake.push(r));
  }

  latest(app: string): Census | undefined {
    const s = this.samples.at(-1);
    return s && censusIn(s, app);
  }

  /** Samples of one app taken in [from, to]. */
  between(app: string, from: number, to = Infinity): Seen[] {
    return this.samples.filter((s) => s.at >= from && s.at <= to).map((s) => ({ at: s.at, census: censusIn(s, app) }));
  }

  /** The most nodes seen running the app at once in [from, to]. */
  maxRunning(app: string, from: number, to = Infinity): number {
    return Math.max(0, ...this.between(app, from, to).map((s) => s.census.running.length));
  }

  /**
   * The first sample taken at or after `since` in which `pred` holds; waits for new samples until
   * `timeoutMs` after `since`, then fails naming `what` and the last census seen.
   */
  async until(app: string, pred: (c: Census) => boolean, o: { since?: number; timeoutMs: number; what: string }): Promise<Seen> {
    const since = o.since ?? Date.now();
    let checked = 0;
    for (;;) {
      for (; checked < this.samples.length; checked++) {
        const s = this.samples[checked];
        if (s.at < since) continue;
        const census = censusIn(s, app);
        if (pred(census)) return { at: s.at, census };
      }
      if (Date.now() > since + o.timeoutMs) throw new Error(`gave up waiting for ${o.what} (${app}, last seen ${JSON.stringify(this.latest(app))})`);
      if (this.stopped) throw new Error(`the census stopped before ${o.what}`);
      await this.next();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}
