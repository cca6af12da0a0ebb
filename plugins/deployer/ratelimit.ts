/**
 * Webhook requests per IP in a sliding minute (WEBHOOK_RATE_LIMIT). The check (`full`) and the count
 * (`count`) are apart: with signature verification on, only authentic deliveries are counted, so forged
 * ones cannot spend the budget of the real git host; the check still happens before the body is read.
 */
const WINDOW_MS = 60_000;

export class RateLimiter {
  private readonly hits = new Map<string, number[]>();
  private sweeps = 0;

  constructor(
    readonly perMinute: number,
    private readonly now: () => number,
  ) {}

  /** 0 when the caller may send another request, else the seconds until it may (nothing is counted). */
  full(ip: string): number {
    if (this.perMinute <= 0) return 0;
    const t = this.now();
    const list = (this.hits.get(ip) ?? []).filter((h) => h > t - WINDOW_MS);
    if (list.length) this.hits.set(ip, list);
    else this.hits.delete(ip);
    return list.length >= this.perMinute ? Math.max(1, Math.ceil((list[0] + WINDOW_MS - t) / 1000)) : 0;
  }

  /** Count one request of the caller. */
  count(ip: string): void {
    if (this.perMinute <= 0) return;
    const t = this.now();
    if (++this.sweeps % 1000 === 0) this.sweep(t);
    const list = this.hits.get(ip) ?? [];
    list.push(t);
    this.hits.set(ip, list);
  }

  /** Check and count: 0 when allowed (and counted), else the seconds to wait. */
  take(ip: string): number {
    const wait = this.full(ip);
    if (!wait) this.count(ip);
    return wait;
  }

  /** Forget callers idle for a whole window, so the map does not grow with every address ever seen. */
  private sweep(t: number): void {
    for (const [ip, list] of this.hits) if (!list.length || list[list.length - 1] <= t - WINDOW_MS) this.hits.delete(ip);
  }
}
