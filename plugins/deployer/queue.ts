/**
 * The deployment queue (spec: Queue rules): one deployment at a time; a single pending slot that the
 * newest request replaces; a burst within the debounce delay becomes one request (the timer restarts at
 * each arrival); a failed run never blocks the next.
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
}

export class DeployQueue {
  pending: DeployRequest | null = null;
  running: DeployRequest | null = null;
  private timer?: NodeJS.Timeout;
  private current: Promise<void> = Promise.resolve();
  private closed = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly opts: {
      debounceMs: number;
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
      clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.pump();
      }, this.opts.debounceMs);
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
