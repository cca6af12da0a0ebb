/**
 * Work that runs every interval, one round at a time: a round never overlaps the next, a round asked for
 * while one runs is that one, and stopping waits for the round in progress. The payment watcher, the
 * reconciler, the guard and the monitor each run one.
 */
export class Periodic {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  /** `onError` hears a failed round; the next round runs all the same. */
  constructor(
    private readonly round: () => Promise<void>,
    private readonly onError: (e: Error) => void,
  ) {}

  start(intervalMs: number): void {
    const loop = () => {
      this.timer = setTimeout(async () => {
        await this.run();
        if (this.timer) loop();
      }, intervalMs);
      this.timer.unref();
    };
    loop();
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  /** One round now, or the one already running. */
  run(): Promise<void> {
    this.running ??= this.round()
      .catch((e) => this.onError(e as Error))
      .finally(() => (this.running = null));
    return this.running;
  }
}

/**
 * A class whose work is one Periodic: `start`, `stop` and `tick` (one round now) come from here, and the
 * class says what a round does and what a failed round means to it.
 */
export abstract class PeriodicWork {
  private readonly periodic = new Periodic(
    () => this.round(),
    (e) => this.roundFailed(e),
  );

  protected abstract round(): Promise<void>;
  protected abstract roundFailed(e: Error): void;

  start(intervalMs: number): void {
    this.periodic.start(intervalMs);
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One round now, or the one already running. */
  tick(): Promise<void> {
    return this.periodic.run();
  }
}
