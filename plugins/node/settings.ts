/**
 * The `node:` config section. Commands are argument vectors (never shell strings): request input never
 * reaches a command line, and the operator sees exactly what runs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { configSchema } from '../../core/plugin-api.ts';

export type Argv = string[];

export interface BenchmarkSettings {
  /** The benchmark daemon's conf (rpcuser, rpcpassword, rpcport); its folder holds debug.log. */
  confFile?: string;
  network?: 'main' | 'test' | 'regtest';
  rpc: { url?: string; user?: string; password?: string };
  /** Where debug.log is looked for when no conf names the folder (facts §4.4). */
  dataDirs: string[];
  debugLog?: string;
  startCommand: Argv;
  restartCommand?: Argv;
  updateCommand: Argv;
  startWaitMs: number;
  stopWaitMs: number;
}

export interface NodeConfig {
  routerIp: string;
  hardenedOs: boolean;
  eventStream: boolean;
  eventStreamKeepaliveMs: number;
  /** Development mode: the development branch and the development marketplace. */
  development: boolean;
  /** The node software's own git checkout. */
  softwareDir: string;
  git: { command: Argv; remote: string; masterBranch: string; developmentBranch: string };
  npm: { command: Argv; installArgs: string[] };
  /** Timeout of one git or npm step. */
  commandTimeoutMs: number;
  /** The front end, when the node has one: its folder and the command that builds it there. */
  ui: { dir: string; buildCommand: Argv };
  /** How /core/restart restarts the node: this command, or (unset) a graceful stop the supervisor restarts. */
  restartCommand?: Argv;
  daemon: { updateCommand: Argv; debugLog?: string; warmWaitMs: number; stopWaitMs: number };
  benchmark: BenchmarkSettings;
  chainAccount: { account: string; chainid: number } | null;
  marketplaceUrl: string;
  geolocation: { providers: string[]; cacheSeconds: number; timeoutMs: number };
  /** Organisation names that mark a static-IP hosting provider (facts §4.1). */
  staticIpOrgs: string[];
  availability: { timeoutMs: number; minimumVersion: string };
  /** UPnP: keep the node's own ports mapped (`enabled`), how the gateway is found, lease and refresh. */
  upnp: { enabled: boolean; gatewayUrl?: string; searchTimeoutMs: number; requestTimeoutMs: number; leaseSeconds: number; refreshMinutes: number; maxListed: number };
  /** The DOS counter's checks (dossources.ts): how often, and the lowest benchmark version accepted. */
  dos: { intervalSeconds: number; benchmarkMinimumVersion: string; availabilityPeers: number };
  /** Node-to-node port checks (keepupnpportsopen, checkappavailability). */
  ports: { appMin: number; appMax: number; banned: number[]; signatureMaxAgeSeconds: number; touchGapMs: number };
  hardened: { configDaemonUrl: string; timeoutMs: number };
  /** allowport: the firewall tool and how it runs (a command prefix, e.g. [ip, netns, exec, fw, nft]). */
  firewall: { tool: 'ufw' | 'nft' | 'none'; command: Argv; nft: { family: string; table: string; inputChain: string; outputChain: string } };
}

/**
 * The node software's own checkout: the nearest folder above this file that holds a package.json. From the
 * sources that is two levels up; from the build (dist/plugins/node/) three: a fixed `../..` made the
 * shipped node's default software folder `dist/`, which is no git checkout (updatecore refused).
 */
export function softwareRoot(from = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.resolve(from, '../..');
  }
}
export const API_PORTS = Array.from({ length: 8 }, (_, i) => 16127 + 10 * i);

const argv = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 4096 }, minItems: 1, maxItems: 64 };
const HOME = process.env.HOME ?? '/root';

export const schema = configSchema<NodeConfig>({
  type: 'object',
  additionalProperties: false,
  properties: {
    routerIp: { type: 'string', default: '' },
    hardenedOs: { type: 'boolean', default: false },
    eventStream: { type: 'boolean', default: false },
    eventStreamKeepaliveMs: { type: 'integer', minimum: 100, maximum: 600_000, default: 15_000 },
    development: { type: 'boolean', default: false },
    // Empty: the node's own checkout (softwareRoot()). A constant default keeps the schema the same on every
    // machine, so the build's compiled validator serves it (core/built-validators.ts).
    softwareDir: { type: 'string', default: '' },
    git: {
      type: 'object',
      additionalProperties: false,
      properties: {
        command: { ...argv, default: ['git'] },
        remote: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,100}$', default: 'origin' },
        masterBranch: { type: 'string', pattern: '^[A-Za-z0-9._/-]{1,100}$', default: 'master' },
        developmentBranch: { type: 'string', pattern: '^[A-Za-z0-9._/-]{1,100}$', default: 'development' },
      },
      default: {},
    },
    npm: {
      type: 'object',
      additionalProperties: false,
      properties: {
        command: { ...argv, default: ['npm'] },
        installArgs: { type: 'array', items: { type: 'string', minLength: 1 }, default: ['ci', '--no-audit', '--no-fund'] },
      },
      default: {},
    },
    commandTimeoutMs: { type: 'integer', minimum: 1000, maximum: 3_600_000, default: 900_000 },
    ui: {
      type: 'object',
      additionalProperties: false,
      properties: { dir: { type: 'string', default: '' }, buildCommand: { ...argv, default: ['npm', 'run', 'build'] } },
      default: {},
    },
    restartCommand: argv,
    daemon: {
      type: 'object',
      additionalProperties: false,
      properties: {
        updateCommand: { ...argv, default: ['apt-get', 'install', '-y', '--only-upgrade', 'cored'] },
        debugLog: { type: 'string', minLength: 1 },
        // After a start or restart: how long the daemon may answer -28 (loading blocks) before the answer says so.
        warmWaitMs: { type: 'integer', minimum: 0, maximum: 3_600_000, default: 300_000 },
        // streamchainpreparation: how long the daemon may take to stop.
        stopWaitMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 120_000 },
      },
      default: {},
    },
    benchmark: {
      type: 'object',
      additionalProperties: false,
      properties: {
        confFile: { type: 'string', minLength: 1 },
        network: { enum: ['main', 'test', 'regtest'] },
        rpc: {
          type: 'object',
          additionalProperties: false,
          properties: { url: { type: 'string', pattern: '^https?://[^\\s]+$' }, user: { type: 'string' }, password: { type: 'string' } },
          default: {},
        },
        dataDirs: { type: 'array', items: { type: 'string', minLength: 1 }, default: [`${HOME}/.corebenchmark`, `${HOME}/.legacybenchmark`] },
        debugLog: { type: 'string', minLength: 1 },
        startCommand: { ...argv, default: ['corebenchd', '-daemon'] },
        restartCommand: argv,
        updateCommand: { ...argv, default: ['apt-get', 'install', '-y', '--only-upgrade', 'corebench'] },
        startWaitMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 60_000 },
        stopWaitMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 60_000 },
      },
      default: {},
    },
    chainAccount: {
      oneOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          required: ['account', 'chainid'],
          properties: { account: { type: 'string', pattern: '^[A-Za-z0-9:_-]{1,128}$' }, chainid: { type: 'integer', minimum: 0, maximum: 20 } },
        },
      ],
      default: null,
    },
    marketplaceUrl: { type: 'string', pattern: '^https?://[^\\s]+$', default: 'https://stats.runoncore.io' },
    geolocation: {
      type: 'object',
      additionalProperties: false,
      properties: {
        providers: { type: 'array', items: { type: 'string', pattern: '^https?://[^\\s]+$' }, default: [] },
        cacheSeconds: { type: 'integer', minimum: 0, maximum: 30 * 86400, default: 86400 },
        timeoutMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 5000 },
      },
      default: {},
    },
    staticIpOrgs: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      default: ['hetzner', 'ovh', 'netcup', 'hostnodes', 'contabo', 'hostslim', 'zayo', 'cogent', 'lumen'],
    },
    hardened: {
      type: 'object',
      additionalProperties: false,
      properties: {
        configDaemonUrl: { type: 'string', pattern: '^https?://[^\\s]+/$', default: 'http://127.0.0.1:16130/' },
        timeoutMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 5000 },
      },
      default: {},
    },
    firewall: {
      type: 'object',
      additionalProperties: false,
      properties: {
        tool: { enum: ['ufw', 'nft', 'none'], default: 'ufw' },
        command: { ...argv, default: ['ufw'] },
        nft: {
          type: 'object',
          additionalProperties: false,
          properties: {
            family: { enum: ['inet', 'ip', 'ip6'], default: 'inet' },
            table: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', default: 'filter' },
            inputChain: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', default: 'input' },
            outputChain: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$', default: 'output' },
          },
          default: {},
        },
      },
      default: {},
    },
    upnp: {
      type: 'object',
      additionalProperties: false,
      properties: {
        enabled: { type: 'boolean', default: false },
        gatewayUrl: { type: 'string', pattern: '^http://[^\\s]+$' },
        searchTimeoutMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 3000 },
        // One route's calls to the gateway (a mapping is two calls, a list one per entry).
        requestTimeoutMs: { type: 'integer', minimum: 100, maximum: 600_000, default: 10_000 },
        // 0: no expiry (an IGDv2 gateway makes it its longest lease, a week); renewed at each refresh anyway.
        leaseSeconds: { type: 'integer', minimum: 0, maximum: 604_800, default: 0 },
        // About every 6 blocks of 2 minutes (facts §4.6).
        refreshMinutes: { type: 'number', minimum: 0.01, maximum: 1440, default: 12 },
        maxListed: { type: 'integer', minimum: 1, maximum: 65_535, default: 1024 },
      },
      default: {},
    },
    dos: {
      type: 'object',
      additionalProperties: false,
      properties: {
        // 0: no rounds.
        intervalSeconds: { type: 'number', minimum: 0, maximum: 86_400, default: 120 },
        benchmarkMinimumVersion: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+$', default: '6.2.0' },
        // How many peers a round asks whether they reach this node (dospeers.ts), until one does.
        availabilityPeers: { type: 'integer', minimum: 1, maximum: 16, default: 3 },
      },
      default: {},
    },
    ports: {
      type: 'object',
      additionalProperties: false,
      properties: {
        appMin: { type: 'integer', minimum: 1, maximum: 65_535, default: 31_000 },
        appMax: { type: 'integer', minimum: 1, maximum: 65_535, default: 39_999 },
        banned: { type: 'array', items: { type: 'integer', minimum: 1, maximum: 65_535 }, default: [] },
        signatureMaxAgeSeconds: { type: 'integer', minimum: 1, maximum: 86_400, default: 600 },
        touchGapMs: { type: 'integer', minimum: 0, maximum: 10_000, default: 250 },
      },
      default: {},
    },
    availability: {
      type: 'object',
      additionalProperties: false,
      properties: {
        timeoutMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 5000 },
        minimumVersion: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+$', default: '8.13.1' },
      },
      default: {},
    },
  },
});
