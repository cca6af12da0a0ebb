/**
 * TEST DOUBLE of the benchmark daemon (it has no public build): a JSON-RPC server over real HTTP with basic
 * auth that speaks the benchmark daemon's protocol and methods (facts §3.3) with canned, stateful answers.
 * It records every call so tests can prove what reached it; `mode` makes it hang or refuse credentials.
 */
import http from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';

export interface BenchmarkDouble {
  url: string;
  user: string;
  password: string;
  port: number;
  /** Every call that passed authentication, in order. */
  calls: { method: string; params: unknown[] }[];
  /** What the double reports; tests may change it. */
  state: { benchmarking: string; backend: boolean; running: boolean; version?: string; ipaddress?: string | null };
  /** 'ok' answers; 'hang' accepts requests and never answers. */
  mode: 'ok' | 'hang';
  /** The signature the double gives a hex string (so tests can predict the relayed answer). */
  signed(hex: string): string;
  close(): Promise<void>;
}

const METHODS = ['getstatus', 'getbenchmarks', 'getinfo', 'help', 'stop', 'restartnodebenchmarks', 'signlegacynodetransaction', 'getpublicip', 'startmultiportbench', 'getpublickey', 'encryptmessage', 'decryptmessage', 'decryptrsamessage'];

export async function startBenchmarkDouble(opts: { user?: string; password?: string } = {}): Promise<BenchmarkDouble> {
  const user = opts.user ?? 'benchuser';
  const password = opts.password ?? randomBytes(8).toString('hex');
  const expected = 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
  const signed = (hex: string) => createHash('sha256').update(hex).digest('hex');
  const hung = new Set<http.ServerResponse>();

  const double: BenchmarkDouble = {
    url: '',
    user,
    password,
    port: 0,
    calls: [],
    state: { benchmarking: 'CUMULUS', backend: true, running: true },
    mode: 'ok',
    signed,
    close: async () => {
      for (const res of hung) res.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
    },
  };

  function answer(method: string, params: unknown[]): { result?: unknown; error?: { code: number; message: string } } {
    const s = double.state;
    switch (method) {
      case 'getstatus':
        return { result: { status: s.running ? 'online' : 'offline', benchmarking: s.benchmarking, core: s.backend } };
      case 'getbenchmarks':
        return {
          result: {
            status: s.benchmarking, ipaddress: s.ipaddress === undefined ? '203.0.113.7:16127' : s.ipaddress, cores: 8, real_cores: 4, ram: 31.2, ssd: 480, hdd: 0, totalstorage: 480,
            disksinfo: [{ mount: '/', size: 480, writespeed: 820.5 }], ddwrite: 820.5, eps: 1450.2, ping: 12.3, download_speed: 512.4,
            upload_speed: 498.1, speed: 498.1, architecture: 'amd64', thunder: false, systemsecure: false, bench_version: s.version ?? '4.0.0', core_version: '8.20.0',
          },
        };
      case 'getinfo':
        return { result: { version: s.version ?? '4.0.0', rpcport: double.port } };
      case 'help': {
        const cmd = String(params[0] ?? '');
        if (!cmd) return { result: METHODS.join('\n') };
        return { result: METHODS.includes(cmd) ? `${cmd}\nHelp for the ${cmd} call.` : `help: unknown command: ${cmd}` };
      }
      case 'stop':
        s.running = false;
        return { result: 'Benchmark daemon stopping' };
      case 'restartnodebenchmarks':
        s.benchmarking = 'running';
        return { result: 'Restarting node benchmarks' };
      case 'signlegacynodetransaction': {
        const hex = params[0];
        if (typeof hex !== 'string' || !/^[0-9a-fA-F]+$/.test(hex)) return { error: { code: -8, message: 'Invalid hex string' } };
        return { result: signed(hex) };
      }
      default:
        return { error: { code: -32601, message: 'Method not found' } };
    }
  }

  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (double.mode === 'hang') return void hung.add(res);
      if (req.method !== 'POST') return void res.writeHead(405).end();
      if (req.headers.authorization !== expected) return void res.writeHead(401).end();
      let msg: any;
      try {
        msg = JSON.parse(body);
      } catch {
        res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ result: null, error: { code: -32700, message: 'Parse error' }, id: null }));
        return;
      }
      const params = Array.isArray(msg.params) ? msg.params : [];
      double.calls.push({ method: msg.method, params });
      const out = answer(msg.method, params);
      const status = out.error ? (out.error.code === -32601 ? 404 : 500) : 200;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ result: out.result ?? null, error: out.error ?? null, id: msg.id }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  double.port = (server.address() as AddressInfo).port;
  double.url = `http://127.0.0.1:${double.port}/`;
  return double;
}
