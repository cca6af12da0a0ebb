/**
 * At most `max` webhook bodies are read at once (WEBHOOK_MAX_UPLOADS); a few more callers wait their turn
 * with their bytes still in the kernel's socket buffers, the rest are refused at once. Bodies are held in
 * memory while read (the HMAC and the JSON need all of it), so this caps the service's memory: 100
 * concurrent 24 MB uploads once took it from 120 MB to 1.9 GB. Each slot reads into its own buffer,
 * reused from one body to the next: a new 24 MB buffer per body piled up as garbage the collector frees
 * late (measured: ten sequential 24 MB bodies took the service from 122 MB to 219 MB).
 */
export interface UploadSlot {
  /** The slot's buffer (allocated on first use, touched only as far as bodies reach). */
  buffer: Buffer;
  release: () => void;
}

export class UploadGate {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly free: Buffer[] = [];

  constructor(
    readonly max: number,
    private readonly bufferBytes: number,
    private readonly maxWaiting = 8,
  ) {}

  get active(): number {
    return this.running;
  }

  /** A release function once a slot is free; null when too many wait already (refuse the caller), or after `timeoutMs`. */
  async acquire(timeoutMs: number): Promise<UploadSlot | null> {
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

  private releaser(): UploadSlot {
    let done = false;
    const buffer = this.free.pop() ?? Buffer.allocUnsafeSlow(this.bufferBytes);
    return {
      buffer,
      release: () => {
        if (done) return;
        done = true;
        this.free.push(buffer);
        this.running--;
        this.waiting.shift()?.();
      },
    };
  }
}
