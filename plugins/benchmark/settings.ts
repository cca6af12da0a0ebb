/**
 * The `benchmark:` config section and how the benchmark daemon's RPC endpoint and credentials are found:
 * explicit `rpc` keys, then its cookie file, then its config file (`rpcuser`, `rpcpassword`, `rpcport`, with
 * `[main]`/`[test]` sections), then the reference defaults (port 16224, the reference's fixed credentials).
 * The conf and cookie readers are the plugin API's, shared with the daemon plugin.
 */
import { configSchema as defineConfig } from '../../core/plugin-api.ts';
import { parseConf, readCookie } from '../../lib/daemon-rpc/conf.ts';
import fs from 'node:fs';

export interface BenchmarkSettings {
  rpc: { url?: string; user?: string; password?: string };
  confFile?: string;
  cookieFile?: string;
  network?: 'main' | 'test';
  timeoutMs: number;
  concurrency: number;
  maxQueued: number;
  /** Spec name -> this benchmark daemon's method name. */
  methods: Record<string, string>;
  health: { timeoutMs: number };
}

export const configSchema = defineConfig<BenchmarkSettings>({
  type: 'object',
  additionalProperties: false,
  properties: {
    rpc: {
      type: 'object',
      additionalProperties: false,
      properties: { url: { type: 'string', pattern: '^https?://[^\\s]+$' }, user: { type: 'string' }, password: { type: 'string' } },
      default: {},
    },
    confFile: { type: 'string', minLength: 1 },
    cookieFile: { type: 'string', minLength: 1 },
    network: { enum: ['main', 'test'] },
    // Reference: 10 s per call (facts §3.3).
    timeoutMs: { type: 'integer', minimum: 100, maximum: 600_000, default: 10_000 },
    concurrency: { type: 'integer', minimum: 1, maximum: 64, default: 4 },
    maxQueued: { type: 'integer', minimum: 0, maximum: 10_000, default: 100 },
    methods: { type: 'object', additionalProperties: { type: 'string', pattern: '^[a-z0-9_]{1,64}$' }, default: {} },
    health: {
      type: 'object',
      additionalProperties: false,
      properties: { timeoutMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 4000 } },
      default: {},
    },
  },
});

/** Spec names the benchmark daemon knows under its older name (facts §3.3). */
export const BENCHMARK_METHODS: Readonly<Record<string, string>> = Object.freeze({
  signcorenodetransaction: 'signlegacynodetransaction',
});

export interface Connection {
  url: string;
  user: string;
  password: string;
  source: string;
}

const DEFAULT_PORT = { main: 16224, test: 26224 };

export function resolveConnection(s: Pick<BenchmarkSettings, 'rpc' | 'confFile' | 'cookieFile' | 'network'>): Connection {
  let conf: Record<string, string> = {};
  let network = s.network ?? 'main';
  if (s.confFile) {
    let text: string;
    try {
      text = fs.readFileSync(s.confFile, 'utf8');
    } catch (e) {
      throw new Error(`cannot read the benchmark config file ${s.confFile} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    const parsed = parseConf(text, s.confFile, s.network);
    conf = parsed.values;
    network = parsed.network === 'main' ? 'main' : 'test'; // the benchmark daemon has no regtest port of its own
  }
  const port = /^\d{1,5}$/.test(conf.rpcport ?? '') ? conf.rpcport : DEFAULT_PORT[network];
  const url = s.rpc.url ?? `http://${conf.rpcconnect || '127.0.0.1'}:${port}/`;
  if (s.rpc.user !== undefined || s.rpc.password !== undefined) return { url, user: s.rpc.user ?? '', password: s.rpc.password ?? '', source: 'benchmark.rpc' };
  if (s.cookieFile) {
    let cookie: { user: string; password: string };
    try {
      cookie = readCookie(s.cookieFile);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      throw new Error(code ? `cannot read the benchmark cookie file ${s.cookieFile} (${code})` : (e as Error).message);
    }
    return { url, ...cookie, source: `cookie ${s.cookieFile}` };
  }
  if (conf.rpcpassword !== undefined) return { url, user: conf.rpcuser ?? '', password: conf.rpcpassword, source: `config file ${s.confFile}` };
  // The reference's fixed credentials, only as the last fallback (facts §3.3; §9: do not hard-code them).
  return { url, user: 'corebenchuser', password: 'corebenchpassword', source: 'reference defaults' };
}
