/**
 * The benchmark daemon client with this node's bounds (calls in flight, waiting, one deadline per call) and
 * the relay of one route: its `x` block names the call and its string parameters.
 */
import { ApiError, type HandlerInput } from '../../core/plugin-api.ts';
import { RpcError, createRpcClient, type RpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { BENCHMARK_METHODS, resolveConnection, type BenchmarkSettings, type Connection } from './settings.ts';

export interface BenchmarkClient {
  call<T = unknown>(method: string, params?: unknown[], opts?: { signal?: AbortSignal; timeoutMs?: number }): Promise<T>;
  readonly inFlight: number;
}

export function createBenchmarkClient(settings: BenchmarkSettings): BenchmarkClient {
  let conn: Connection | undefined;
  let client: RpcClient | undefined;
  let active = 0;
  const connect = (): RpcClient => {
    let next: Connection;
    try {
      next = resolveConnection(settings);
    } catch (e) {
      throw new RpcError('unreachable', 'ENOCONF', `The benchmark daemon is unreachable: ${(e as Error).message}`);
    }
    if (!client || !conn || next.url !== conn.url || next.user !== conn.user || next.password !== conn.password)
      client = createRpcClient({ url: next.url, user: next.user, password: next.password, timeoutMs: settings.timeoutMs, concurrency: settings.concurrency, name: 'benchmark daemon' });
    conn = next;
    return client;
  };
  return {
    get inFlight() {
      return active;
    },
    async call<T>(method: string, params: unknown[] = [], opts: { signal?: AbortSignal; timeoutMs?: number } = {}) {
      if (active >= settings.concurrency + settings.maxQueued)
        throw new RpcError('timeout', 'EBUSY', `The benchmark daemon is busy: ${active} calls are running or waiting; try again shortly`);
      const timeoutMs = opts.timeoutMs ?? settings.timeoutMs;
      const deadline = AbortSignal.timeout(timeoutMs);
      active++;
      try {
        // Credentials are re-read each call (cheap): a benchmark daemon restart may write a new cookie.
        return await connect().call<T>(method, params, { timeoutMs, signal: opts.signal ? AbortSignal.any([opts.signal, deadline]) : deadline });
      } catch (e) {
        if (e instanceof RpcError) throw e;
        const name = (e as Error)?.name;
        if (name === 'TimeoutError' || name === 'AbortError') throw new RpcError('timeout', 'ETIMEDOUT', `The benchmark daemon did not answer within ${timeoutMs} ms`);
        throw new RpcError('protocol', 500, `The benchmark daemon call failed: ${(e as Error)?.message ?? String(e)}`);
      } finally {
        active--;
      }
    },
  };
}

const RPC_NAMES: Record<number, string> = { [-32601]: 'MethodNotFound', [-32602]: 'InvalidParams', [-32600]: 'InvalidRequest', [-8]: 'InvalidParameter', [-1]: 'MiscError' };

export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof RpcError) {
    if (e.kind === 'rpc') {
      const code = typeof e.code === 'number' ? e.code : 500;
      return new ApiError(code, RPC_NAMES[code] ?? 'BenchmarkError', e.message);
    }
    if (e.kind === 'unreachable') return new ApiError(503, 'BenchmarkUnreachable', e.message);
    if (e.kind === 'timeout') return e.code === 'EBUSY' ? new ApiError(503, 'BenchmarkBusy', e.message) : new ApiError(504, 'BenchmarkTimeout', e.message);
    return new ApiError(502, 'BenchmarkProtocolError', e.message);
  }
  return new ApiError(500, 'BenchmarkError', `The benchmark daemon call failed: ${(e as Error)?.message ?? String(e)}`);
}

interface Param {
  name: string;
  required?: boolean;
  default?: string;
  maxLength?: number;
  pattern?: string;
}

/** The call's string parameters: path segment, else raw-JSON body, else query; checked before any call. */
export function paramsOf(input: HandlerInput): unknown[] {
  const list = (input.route.meta.params ?? []) as Param[];
  const body = input.body;
  if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
    throw new ApiError(400, 'ValidationError', 'The request body must be a JSON object of named parameters');
  const out = list.map((p) => {
    const v = [input.params[p.name], (body as Record<string, unknown> | undefined)?.[p.name], input.query[p.name]].find((x) => x !== undefined && x !== null && x !== '');
    if (v === undefined) {
      if (p.default !== undefined) return p.default;
      if (p.required) throw new ApiError(400, 'ValidationError', `${p.name} is required`);
      return undefined;
    }
    if (typeof v !== 'string') throw new ApiError(400, 'ValidationError', `${p.name} must be a string`);
    if (v.length > (p.maxLength ?? 4096)) throw new ApiError(400, 'ValidationError', `${p.name} is longer than ${p.maxLength ?? 4096} characters`);
    if (p.pattern && !new RegExp(p.pattern).test(v)) throw new ApiError(400, 'ValidationError', `${p.name} is not in the expected form`);
    return v;
  });
  while (out.length && out[out.length - 1] === undefined) out.pop();
  return out;
}

export function methodOf(input: HandlerInput, overrides: Record<string, string>): string {
  const name = (input.route.meta.rpc as string | undefined) ?? input.route.id.slice(input.route.id.indexOf('.') + 1);
  return overrides[name] ?? BENCHMARK_METHODS[name] ?? name;
}
