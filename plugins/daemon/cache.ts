/**
 * A short cache for the daemon's hot public reads: block count, best block hash and blocks by hash.
 * Keyed by method and parameters only (never by caller); privileged calls never come here. A block asked
 * by height is never cached (the relay resolves the height to a hash each time), so a reorg cannot serve a
 * stale block for a height; seeing a new tip clears every entry, including blocks whose confirmations moved.
 * Values are frozen: a consumer that mutates a shared cached object fails loudly instead of corrupting it.
 */
export interface CacheOptions {
  ttlMs: number;
  blockTtlMs: number;
  maxEntries: number;
}

const HASH = /^[0-9a-fA-F]{64}$/;
const TIP_METHODS = new Set(['getblockcount', 'getbestblockhash']);

interface Entry {
  value: unknown;
  expires: number;
}

export class HotCache {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<unknown>>();
  private readonly tips = new Map<string, unknown>();
  hits = 0;
  misses = 0;

  constructor(
    private readonly clock: { now(): number },
    private readonly opts: CacheOptions,
  ) {}

  /** How long an answer of this call may be reused; 0 = never. */
  ttlFor(method: string, params: unknown[]): number {
    if (TIP_METHODS.has(method)) return params.length === 0 ? this.opts.ttlMs : 0;
    if (method === 'getblock' && typeof params[0] === 'string' && HASH.test(params[0])) return this.opts.blockTtlMs;
    return 0;
  }

  /** The cached answer, or `load()` once for all concurrent callers of the same key. */
  async get(method: string, params: unknown[], load: () => Promise<unknown>): Promise<unknown> {
    const ttl = this.ttlFor(method, params);
    if (ttl <= 0) return this.observe(method, params, await load());
    const key = method + JSON.stringify(params);
    const hit = this.entries.get(key);
    if (hit && hit.expires > this.clock.now()) {
      this.hits++;
      this.entries.delete(key); // most recently used goes last
      this.entries.set(key, hit);
      return hit.value;
    }
    const pending = this.loading.get(key);
    if (pending) {
      this.hits++;
      return pending;
    }
    this.misses++;
    const p = load().then((value) => {
      this.observe(method, params, value);
      this.entries.delete(key);
      this.entries.set(key, { value: deepFreeze(value), expires: this.clock.now() + ttl });
      while (this.entries.size > this.opts.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      return value;
    });
    this.loading.set(key, p);
    try {
      return await p;
    } finally {
      this.loading.delete(key);
    }
  }

  /** A fresh tip answer that differs from the last one means every cached answer may be stale. */
  private observe(method: string, params: unknown[], value: unknown): unknown {
    if (TIP_METHODS.has(method) && params.length === 0) {
      const before = this.tips.get(method);
      this.tips.set(method, value);
      if (before !== undefined && before !== value) this.clear();
    }
    return value;
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as any)[k]);
  }
  return v;
}
