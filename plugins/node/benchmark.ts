/**
 * The benchmark daemon as the node controls it: its RPC endpoint (from `node.benchmark.rpc` or its conf),
 * start, restart and update through configured argument vectors, each answering once the daemon's RPC
 * answers again (or saying why not).
 */
import { createRpcClient, RpcError } from '../../lib/daemon-rpc/rpc.ts';
import { readConf } from '../../lib/daemon-rpc/conf.ts';
import { ApiError } from '../../core/plugin-api.ts';
import { mustRun, runArgv, until } from './procs.ts';
import type { BenchmarkSettings } from './settings.ts';

export interface Benchmark {
  call<T = unknown>(method: string, params?: unknown[], timeoutMs?: number): Promise<T>;
  answers(): Promise<boolean>;
  start(): Promise<{ message: string }>;
  restart(): Promise<{ message: string }>;
  update(): Promise<{ message: string }>;
}

function endpoint(s: BenchmarkSettings): { url: string; user?: string; password?: string } {
  if (s.rpc.url) return { url: s.rpc.url, user: s.rpc.user, password: s.rpc.password };
  if (s.confFile) {
    try {
      const c = readConf(s.confFile, s.network).values;
      return { url: `http://${c.rpcconnect || '127.0.0.1'}:${c.rpcport || 16224}/`, user: c.rpcuser, password: c.rpcpassword };
    } catch {
      /* fall through to the default port */
    }
  }
  return { url: 'http://127.0.0.1:16224/', user: s.rpc.user, password: s.rpc.password };
}

export function createBenchmark(s: BenchmarkSettings, logFile: string): Benchmark {
  // A client per call: a daemon that restarts leaves no kept-alive socket behind to fail the next call.
  async function call<T>(method: string, params: unknown[] = [], timeoutMs = 5000): Promise<T> {
    const c = createRpcClient({ ...endpoint(s), timeoutMs, concurrency: 1, name: 'benchmark daemon' });
    try {
      return await c.call<T>(method, params);
    } finally {
      c.close();
    }
  }
  /** down: nothing listens; warming: it answers -28 (loading, verifying); up: it answers calls. */
  async function state(): Promise<'down' | 'warming' | 'up'> {
    try {
      await call('getinfo', [], 2000);
      return 'up';
    } catch (e) {
      if (!(e instanceof RpcError) || e.kind !== 'rpc') return 'down';
      return e.code === -28 ? 'warming' : 'up'; // a daemon without getinfo answers -32601, and is up
    }
  }
  const answers = async () => (await state()) !== 'down';
  const ready = async () => (await state()) === 'up';
  async function startWith(argv: string[], done: string, retryMs: number): Promise<{ message: string }> {
    const end = Date.now() + retryMs;
    for (;;) {
      const res = await runArgv(argv, { timeoutMs: Math.max(s.startWaitMs, 10_000), logFile });
      if (res.code === 0) break;
      // After a stop the old process may still hold its folder's lock for a moment.
      if (Date.now() >= end) throw new ApiError(500, 'BenchmarkStartFailed', `${argv[0]} exited with code ${res.code}: ${res.output.trim().slice(-300)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    if (!(await until(ready, true, s.startWaitMs))) throw new ApiError(504, 'BenchmarkTimeout', `The benchmark daemon was not ready within ${s.startWaitMs} ms of being started`);
    return { message: done };
  }
  async function stop(): Promise<void> {
    await call('stop', [], 10_000).catch(() => undefined);
    if (!(await until(answers, false, s.stopWaitMs))) throw new ApiError(504, 'BenchmarkTimeout', `The benchmark daemon still answers ${s.stopWaitMs} ms after being told to stop`);
  }
  async function restart(done: string): Promise<{ message: string }> {
    if (s.restartCommand) {
      await mustRun(s.restartCommand, { timeoutMs: s.stopWaitMs + s.startWaitMs, logFile });
      if (!(await until(ready, true, s.startWaitMs))) throw new ApiError(504, 'BenchmarkTimeout', `The benchmark daemon was not ready within ${s.startWaitMs} ms of the restart`);
      return { message: done };
    }
    await stop();
    return startWith(s.startCommand, done, s.stopWaitMs);
  }
  return {
    call,
    answers,
    async start() {
      if (await answers()) throw new ApiError(409, 'BenchmarkRunning', 'The benchmark daemon is already running');
      return startWith(s.startCommand, 'Benchmark successfully started', 0);
    },
    restart: () => restart('Benchmark successfully restarted'),
    async update() {
      await mustRun(s.updateCommand, { timeoutMs: 900_000, logFile });
      return restart('Benchmark successfully updated');
    },
  };
}
