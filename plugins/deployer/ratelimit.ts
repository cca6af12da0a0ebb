/** Webhook requests per IP in a sliding minute (WEBHOOK_RATE_LIMIT); over it the caller waits (429). */
const WINDOW_MS = 60_000;

export class RateLimiter {
  private readonly hits = new Map<string, number[]>();
  private sweeps = 0;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number,
  ) {}

  /** Count one request; returns 0 when allowed, else the seconds until the caller may try again. */
  take(ip: string): number {
    if (this.perMinute <= 0) return 0;
    const t = this.now();
    const list = (this.hits.get(ip) ?? []).filter((h) => h > t - WINDOW_MS);
    if (++this.sweeps % 1000 === 0) this.sweep(t);
    if (list.length >= this.perMinute) {
      this.hits.set(ip, list);
      return Math.max(1, Math.ceil((list[0] + WINDOW_MS - t) / 1000));
    }
    list.push(t);
    this.hits.set(ip, list);
    return 0;
  }

  /** Forget callers idle for a whole window, so the map does not grow with every address ever seen. */
  private sweep(t: number): void {
    for (const [ip, list] of this.hits) if (!list.length || list[list.length - 1] <= t - WINDOW_MS) this.hits.delete(ip);
  }
}
