/**
 * JSON-RPC 1.0/2.0 over HTTP with basic auth: the transport to the blockchain and benchmark daemons.
 * Each call has a timeout; a bounded number run at once (p-queue) so a slow daemon cannot pile up sockets.
 */
import PQueue from 'p-queue';

export interface RpcClientOptions {
  url: string;
  user?: string;
  password?: string;
  /** Per-call timeout (default 40 s: a tip-list call can take ~14 s on a large node). */
  timeoutMs?: number;
  /** Calls in flight at once (default 5). */
  concurrency?: number;
  /** Named in errors: 'daemon', 'benchmark daemon'. */
  name?: string;
}

export type RpcErrorKind = 'rpc' | 'unreachable' | 'timeout' | 'protocol';

export class RpcError extends Error {
  constructor(
    readonly kind: RpcErrorKind,
    readonly code: number | string,
    message: string,
  ) {
    super(message);
    this.name = kind === 'rpc' ? 'RpcError' : kind === 'unreachable' ? 'DaemonUnreachable' : kind === 'timeout' ? 'DaemonTimeout' : 'DaemonProtocolError';
  }
}

export interface RpcCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface RpcClient {
  call<T = unknown>(method: string, params?: unknown[], opts?: RpcCallOptions): Promise<T>;
  /** Several calls in one HTTP request; each result or RpcError in call order. */
  batch(calls: { method: string; params?: unknown[] }[], opts?: RpcCallOptions): Promise<(unknown | RpcError)[]>;
  readonly inFlight: number;
  readonly options: Readonly<RpcClientOptions>;
}

export function createRpcClient(options: RpcClientOptions): RpcClient {
  const name = options.name ?? 'daemon';
  const timeoutDefault = options.timeoutMs ?? 40_000;
  const queue = new PQueue({ concurrency: options.concurrency ?? 5 });
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.user !== undefined)
    headers.authorization = 'Basic ' + Buffer.from(`${options.user}:${options.password ?? ''}`).toString('base64');
  let nextId = 0;

  async function post(body: unknown, opts: RpcCallOptions): Promise<unknown> {
    const timeoutMs = opts.timeoutMs ?? timeoutDefault;
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (opts.signal) signals.push(opts.signal);
    let res: Response;
    let text: string;
    try {
      res = await fetch(options.url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.any(signals) });
      text = await res.text();
    } catch (e) {
      const err = e as Error & { cause?: { code?: string } };
      if (err.name === 'TimeoutError') throw new RpcError('timeout', 'ETIMEDOUT', `The ${name} did not answer within ${timeoutMs} ms`);
      if (err.name === 'AbortError') throw new RpcError('timeout', 'ABORTED', `The call to the ${name} was aborted`);
      const code = err.cause?.code ?? 'ECONNREFUSED';
      throw new RpcError('unreachable', code, `The ${name} is unreachable at ${redact(options.url)} (${code})`);
    }
    if (res.status === 401 || res.status === 403)
      throw new RpcError('unreachable', res.status, `The ${name} refused the RPC credentials (HTTP ${res.status})`);
    try {
      return JSON.parse(text);
    } catch {
      throw new RpcError('protocol', res.status, `The ${name} answered HTTP ${res.status} without JSON`);
    }
  }

  function unwrap(answer: any): unknown {
    if (answer && answer.error) {
      const code = typeof answer.error.code === 'number' ? answer.error.code : 500;
      throw new RpcError('rpc', code, String(answer.error.message ?? 'Unknown daemon error'));
    }
    if (!answer || !('result' in answer)) throw new RpcError('protocol', 500, `The ${name} answered without a result`);
    return answer.result;
  }

  return {
    options,
    get inFlight() {
      return queue.pending + queue.size;
    },
    call<T>(method: string, params: unknown[] = [], opts: RpcCallOptions = {}) {
      const id = (nextId = (nextId + 1) % 1000);
      return queue.add(async () => unwrap(await post({ jsonrpc: '1.0', id, method, params }, opts)) as T, { signal: opts.signal }) as Promise<T>;
    },
    batch(calls, opts = {}) {
      return queue.add(async () => {
        const answers = (await post(
          calls.map((c, i) => ({ jsonrpc: '1.0', id: i, method: c.method, params: c.params ?? [] })),
          opts,
        )) as any[];
        if (!Array.isArray(answers)) throw new RpcError('protocol', 500, `The ${name} did not answer the batch with a list`);
        const byId = new Map(answers.map((a) => [a.id, a]));
        return calls.map((_, i) => {
          try {
            return unwrap(byId.get(i));
          } catch (e) {
            return e as RpcError;
          }
        });
      }, { signal: opts.signal }) as Promise<(unknown | RpcError)[]>;
    },
  };
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    return url;
  }
}
