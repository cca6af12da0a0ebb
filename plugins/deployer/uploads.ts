/**
 * At most `max` webhook bodies are read at once (WEBHOOK_MAX_UPLOADS); a few more callers wait their turn
 * with their bytes still in the kernel's socket buffers, the rest are refused at once. Bodies are held in
 * memory while read (the HMAC and the JSON need all of it), so this caps the service's memory: 100
 * concurrent 24 MB uploads once took it from 120 MB to 1.9 GB.
 */
export class UploadGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    readonly max: number,
    private readonly maxWaiting = 16,
  ) {}

  get active(): number {
    return this.running;
  }

  /** A release function once a slot is free; null when too many wait already (refuse the caller), or after `timeoutMs`. */
  async acquire(timeoutMs: number): Promise<(() => void) | null> {
    if (this.running < this.max) {
      this.running++;
      return this.releaser();
    }
    if (this.waiting.length >= this.maxWaiting) return null;
    return new Promise((resolve) => {
      const turn = () => {
        clearTimeout(timer);
        this.running++;
        resolve(this.releaser());
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(turn);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(null);
      }, timeoutMs);
      this.waiting.push(turn);
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.running--;
      this.waiting.shift()?.();
    };
  }
}
