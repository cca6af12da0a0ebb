/**
 * The `daemon:` config section and how the RPC endpoint and credentials are found: explicit `rpc` keys
 * first, then the cookie file, then the daemon's own config file, then the reference defaults.
 */
import { configSchema as defineConfig } from '../../core/plugin-api.ts';
import { cookieCandidates, readConf, readCookie, type DaemonConf, type Network } from '../../lib/daemon-rpc/conf.ts';

export interface DaemonSettings {
  rpc: { url?: string; user?: string; password?: string };
  /** The daemon's own config file (rpcuser, rpcpassword, rpcport, [network] sections). */
  confFile?: string;
  /** The daemon's cookie file (`__cookie__:<password>`), re-read when the daemon restarts. */
  cookieFile?: string;
  /** Which `[section]` of confFile applies; by default what the file itself says (regtest=1, testnet=1). */
  network?: Network;
  timeoutMs: number;
  concurrency: number;
  maxQueued: number;
  cache: { ttlMs: number; blockTtlMs: number; maxEntries: number };
  /** Spec name -> this daemon's method name, over the built-in table (methods.ts). */
  methods: Record<string, string>;
  /** Argument vector that starts the daemon (never a shell string). */
  startCommand: string[];
  /** Argument vector that restarts it; default: RPC stop, wait, then startCommand. */
  restartCommand?: string[];
  /** Added to startCommand by /daemon/reindex. */
  reindexArgs: string[];
  /** How long stop/restart/reindex wait for the RPC port to go quiet, and start for it to answer. */
  stopWaitMs: number;
  startWaitMs: number;
  health: { timeoutMs: number };
}

const argv = { type: 'array', items: { type: 'string', minLength: 1, maxLength: 4096 }, minItems: 1, maxItems: 64 };

export const configSchema = defineConfig<DaemonSettings>({
  type: 'object',
  additionalProperties: false,
  properties: {
    rpc: {
      type: 'object',
      additionalProperties: false,
      properties: {
        url: { type: 'string', pattern: '^https?://[^\\s]+$' },
        user: { type: 'string' },
        password: { type: 'string' },
      },
      default: {},
    },
    confFile: { type: 'string', minLength: 1 },
    cookieFile: { type: 'string', minLength: 1 },
    network: { enum: ['main', 'test', 'regtest'] },
    timeoutMs: { type: 'integer', minimum: 100, maximum: 600_000, default: 40_000 },
    concurrency: { type: 'integer', minimum: 1, maximum: 64, default: 5 },
    maxQueued: { type: 'integer', minimum: 0, maximum: 100_000, default: 500 },
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
    methods: { type: 'object', additionalProperties: { type: 'string', pattern: '^[a-z0-9_]{1,64}$' }, default: {} },
    startCommand: { ...argv, default: ['cored', '-daemon'] },
    restartCommand: argv,
    reindexArgs: { type: 'array', items: { type: 'string', minLength: 1 }, default: ['-reindex'] },
    stopWaitMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 60_000 },
    startWaitMs: { type: 'integer', minimum: 0, maximum: 600_000, default: 60_000 },
    health: {
      type: 'object',
      additionalProperties: false,
      properties: { timeoutMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 4000 } },
      default: {},
    },
  },
});

/** Reference fallbacks (facts §3.1): the port of a node's daemon and the conf's default credentials. */
const DEFAULT_PORT: Record<Network, number> = { main: 16124, test: 26124, regtest: 26124 };
const DEFAULT_USER = 'rpcuser';
const DEFAULT_PASSWORD = 'rpcpassword';

export interface Connection {
  url: string;
  user: string;
  password: string;
  /** Where the credentials came from, for logs and health (never the secret itself). */
  source: string;
  /** The cookie file in use: a changed cookie (daemon restarted) means reconnecting. */
  cookieFile?: string;
}

/** Resolve where and how to reach the daemon. Throws a readable Error when a named file cannot be read. */
export function resolveConnection(s: Pick<DaemonSettings, 'rpc' | 'confFile' | 'cookieFile' | 'network'>): Connection {
  let conf: DaemonConf | undefined;
  if (s.confFile) {
    try {
      conf = readConf(s.confFile, s.network);
    } catch (e) {
      throw new Error(`cannot read the daemon config file ${s.confFile} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  const network = conf?.network ?? s.network ?? 'main';
  const c = conf?.values ?? {};
  const url =
    s.rpc.url ??
    `http://${c.rpcconnect || '127.0.0.1'}:${/^\d{1,5}$/.test(c.rpcport ?? '') ? c.rpcport : DEFAULT_PORT[network]}/`;

  if (s.rpc.user !== undefined || s.rpc.password !== undefined)
    return { url, user: s.rpc.user ?? '', password: s.rpc.password ?? '', source: 'daemon.rpc' };
  if (s.cookieFile) return { url, ...cookie(s.cookieFile), source: `cookie ${s.cookieFile}`, cookieFile: s.cookieFile };
  if (conf && c.rpcpassword !== undefined)
    return { url, user: c.rpcuser ?? DEFAULT_USER, password: c.rpcpassword, source: `config file ${conf.file}` };
  if (conf) {
    // No password in the conf: the daemon authenticates with its cookie next to its data.
    const found = cookieCandidates(conf).find((f) => {
      try {
        readCookie(f);
        return true;
      } catch {
        return false;
      }
    });
    if (found) return { url, ...readCookie(found), source: `cookie ${found}`, cookieFile: found };
  }
  return { url, user: c.rpcuser ?? DEFAULT_USER, password: DEFAULT_PASSWORD, source: 'reference defaults' };
}

function cookie(file: string) {
  try {
    return readCookie(file);
  } catch (e) {
    throw new Error(`cannot read the daemon cookie file ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); is the daemon running?`);
  }
}
