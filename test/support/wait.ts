/**
 * Waiting for a condition, never for a time: poll until `fn` returns something truthy. Without `timeoutMs`
 * mocha's own timeout bounds the wait; with it the wait fails naming `what` (no assertion on how long it took).
 */
export async function eventually<T>(
  fn: () => Promise<T> | T,
  opts: { what?: string; timeoutMs?: number; everyMs?: number } = {},
): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const end = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as Exclude<T, false | null | undefined | 0 | ''>;
    if (Date.now() > end) throw new Error(`gave up waiting for ${opts.what ?? 'a condition'}`);
    await new Promise((r) => setTimeout(r, opts.everyMs ?? 20));
  }
}
