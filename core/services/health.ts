/**
 * Fitness checks: plugins register named checks; `/core/health` lists them and `GET /id/loginphrase` is
 * refused while any required check fails. A check that throws or outlasts its timeout fails.
 */
export interface CheckResult {
  ok: boolean;
  message?: string;
  detail?: unknown;
}

export interface CheckOptions {
  /** Failing checks that are not required are reported but do not gate login. */
  required?: boolean;
  timeoutMs?: number;
}

export interface CheckReport extends CheckResult {
  name: string;
  required: boolean;
  durationMs: number;
}

type CheckFn = () => CheckResult | boolean | Promise<CheckResult | boolean>;

export class HealthRegistry {
  private readonly checks = new Map<string, { fn: CheckFn; opts: Required<CheckOptions> }>();

  register(name: string, fn: CheckFn, opts: CheckOptions = {}): () => void {
    this.checks.set(name, { fn, opts: { required: opts.required ?? true, timeoutMs: opts.timeoutMs ?? 5000 } });
    return () => this.checks.delete(name);
  }

  /** `requiredOnly`: run only the checks that gate login (the login phrase need not wait on the others). */
  async run(opts: { requiredOnly?: boolean } = {}): Promise<{ healthy: boolean; checks: CheckReport[] }> {
    const selected = [...this.checks].filter(([, c]) => c.opts.required || !opts.requiredOnly);
    const checks = await Promise.all(selected.map(([name, c]) => runOne(name, c.fn, c.opts)));
    return { healthy: checks.every((c) => c.ok || !c.required), checks };
  }
}

async function runOne(name: string, fn: CheckFn, opts: Required<CheckOptions>): Promise<CheckReport> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<CheckResult>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, message: `no answer within ${opts.timeoutMs} ms` }), opts.timeoutMs);
    });
    const raw = await Promise.race([Promise.resolve().then(fn), timeout]);
    const res = typeof raw === 'boolean' ? { ok: raw } : raw;
    return { name, required: opts.required, durationMs: Math.round(performance.now() - start), ...res };
  } catch (e) {
    return { name, required: opts.required, ok: false, message: (e as Error).message, durationMs: Math.round(performance.now() - start) };
  } finally {
    clearTimeout(timer);
  }
}
