/**
 * The deployment queue (spec: Queue rules): one deployment at a time; a single pending slot that the
 * newest request replaces; a burst within the debounce delay becomes one request (the timer restarts at
 * each arrival, but a burst waits at most `maxWaitMs` from its first request: a continuous stream of
 * pushes still deploys); a failed run never blocks the next.
 */
export interface DeployRequest {
  commit: string | null;
  tag?: string;
  message?: string;
  pusher?: string;
  forceInstall?: boolean;
  provider: string;
  deliveryId: string;
  /** Epoch ms. */
  receivedAt: number;
  /** Queued again after the service crashed during its deployment (never twice: no crash loop). */
  resumed?: boolean;
  /** Not from a delivery: the poller, or a catch-up after rate-limited deliveries (deploy the head if newer). */
  origin?: 'webhook' | 'poll' | 'catch-up';
}

export class DeployQueue {
  pending: DeployRequest | null = null;
  running: DeployRequest | null = null;
  private timer?: NodeJS.Timeout;
  /** When the burst being debounced began (its first request). */
  private burstStart = 0;
  private current: Promise<void> = Promise.resolve();
  private closed = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly opts: {
      debounceMs: number;
      /** Longest a debounced burst waits, from its first request (default 6 × debounceMs). */
      maxWaitMs?: number;
      run: (req: DeployRequest) => Promise<void>;
      /** The pending slot changed (persist it). */
      onPending?: (req: DeployRequest | null) => void;
      onError?: (err: unknown) => void;
    },
  ) {}

  get debouncing(): boolean {
    return this.timer !== undefined;
  }

  submit(req: DeployRequest): void {
    if (this.closed) return;
    this.pending = req;
    this.opts.onPending?.(req);
    if (this.opts.debounceMs > 0) {
      const now = Date.now();
      if (this.timer === undefined) this.burstStart = now;
      clearTimeout(this.timer);
      const maxWait = this.opts.maxWaitMs ?? this.opts.debounceMs * 6;
      const delay = Math.max(0, Math.min(this.opts.debounceMs, this.burstStart + maxWait - now));
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, delay);
    } else this.pump();
  }

  private pump(): void {
    if (this.closed || this.running || this.timer || !this.pending) {
      if (!this.running && !this.timer && !this.pending) this.settle();
      return;
    }
    const req = this.pending;
    this.pending = null;
    this.opts.onPending?.(null);
    this.running = req;
    this.current = this.opts
      .run(req)
      .catch((e) => this.opts.onError?.(e))
      .finally(() => {
        this.running = null;
        this.pump();
      });
  }

  private settle(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Resolves when nothing runs, waits or is pending (tests, benchmarks). */
  idle(): Promise<void> {
    if (!this.running && !this.timer && !this.pending) return Promise.resolve();
    return new Promise((r) => this.waiters.push(r));
  }

  /** Stop taking work; the running deployment is the caller's to abort. Resolves when it has ended. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.current;
    this.settle();
  }
}
