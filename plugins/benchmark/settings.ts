/**
 * The `benchmark:` config section: the keys every daemon client takes (lib/daemon-rpc/config.ts) with the
 * benchmark daemon's defaults (reference: 10 s per call, facts §3.3), and its reference endpoint: port
 * 16224 (26224 on testnet; it has no regtest port of its own) and the reference's fixed credentials, only
 * as the last fallback after explicit keys, its cookie and its config file.
 */
import { configSchema as defineConfig } from '../../core/plugin-api.ts';
import { rpcConfigProperties, type RpcSettings } from '../../lib/daemon-rpc/config.ts';
import type { DaemonProfile } from '../../lib/daemon-rpc/endpoint.ts';

export type BenchmarkSettings = RpcSettings;

export const configSchema = defineConfig<BenchmarkSettings>({
  type: 'object',
  additionalProperties: false,
  properties: rpcConfigProperties({ timeoutMs: 10_000, concurrency: 4, maxQueued: 100, networks: ['main', 'test'] }),
});

export const BENCHMARK_PROFILE: DaemonProfile = {
  what: 'benchmark',
  section: 'benchmark.rpc',
  ports: { main: 16224, test: 26224, regtest: 26224 },
  regtestAs: 'test',
  defaultUser: 'corebenchuser',
  defaultPassword: 'corebenchpassword',
  confUser: '',
};
