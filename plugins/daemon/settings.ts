/**
 * The `daemon:` config section: the keys every daemon client takes (lib/daemon-rpc/config.ts) and this
 * plugin's own (cache, start and stop commands), and the daemon's reference defaults for its endpoint.
 */
import { configSchema as defineConfig } from '../../core/plugin-api.ts';
import { rpcConfigProperties, type RpcSettings } from '../../lib/daemon-rpc/config.ts';
import { resolveEndpoint, type DaemonProfile, type Endpoint, type EndpointSettings } from '../../lib/daemon-rpc/endpoint.ts';

export interface DaemonSettings extends RpcSettings {
  cache: { ttlMs: number; blockTtlMs: number; maxEntries: number };
  /** Argument vector that starts the daemon (never a shell string). */
  startCommand: string[];
  /** Argument vector that restarts it; default: RPC stop, wait, then startCommand. */
  restartCommand?: string[];
  /** Added to startCommand by /daemon/reindex. */
  reindexArgs: string[];
  /** How long stop/restart/reindex wait for the RPC port to go quiet, and start for it to answer. */
  stopWaitMs: number;
  startWaitMs: number;
}

const argv = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 4096 }, minItems: 1, maxItems: 64 };

export const configSchema = defineConfig<DaemonSettings>({
  type: 'object',
  additionalProperties: false,
  properties: {
    ...rpcConfigProperties({ timeoutMs: 40_000, concurrency: 5, maxQueued: 500, networks: ['main', 'test', 'regtest'] }),
    cache: {
      type: 'object',
      additionalProperties: false,
      properties: {
        ttlMs: { type: 'integer', minimum: 0, maximum: 3_600_000, default: 1000 },
        blockTtlMs: { type: 'integer', minimum: 0, maximum: 3_600_000, default: 10_000 },
        maxEntries: { type: 'integer', minimum: 1, maximum: 100_000, default: 500 },
      },
      default: {},
    },
    startCommand: { ...argv, default: ['cored', '-daemon'] },
    restartCommand: argv,
    reindexArgs: { type: 'array', items: { type: 'string', minLength: 1 }, default: ['-reindex'] },
    stopWaitMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 60_000 },
    startWaitMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 60_000 },
  },
});

/** Reference fallbacks (facts §3.1): the port of a node's daemon and the conf's default credentials. */
export const DAEMON_PROFILE: DaemonProfile = {
  what: 'daemon',
  section: 'daemon.rpc',
  ports: { main: 16124, test: 26124, regtest: 26124 },
  defaultUser: 'rpcuser',
  defaultPassword: 'rpcpassword',
  confUser: 'rpcuser',
};

export type Connection = Endpoint;

/** Where and how to reach the daemon (lib/daemon-rpc/endpoint.ts with this daemon's defaults). */
export function resolveConnection(s: EndpointSettings): Endpoint {
  return resolveEndpoint(s, DAEMON_PROFILE);
}
