/**
 * Node configuration: built-in defaults, then the YAML file (`CORENODE_CONFIG`, else `config/node.yaml` when
 * present), then the env overrides `CORENODE_PORT` and `CORENODE_DATA_DIR`. A bad file is refused at start
 * with the file, the key and the reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ErrorObject } from 'ajv';
import { describeError } from './manifest/schema.ts';
import { validatorFor } from './built-validators.ts';
import { YamlSource } from './manifest/yaml-source.ts';

import { REPO_ROOT } from './paths.ts';

export { REPO_ROOT };

/** The vendor team and support ids (reference §2.7); operators may extend the list with `coreTeam`. */
export const DEFAULT_CORE_TEAM = ['1hjy4bCYBJr4mny4zCE85J94RXa8W6q37', '16iJqiVbHptCx87q6XQwNpKdgEZnFtKcyP'];

export interface ListenerConfig {
  port: number;
  host: string;
  /**
   * PEM files of the listener's certificate. Without `port`, the listener speaks HTTPS only (on `port`);
   * with it, HTTP on `port` and HTTPS on `tls.port` at once (`next`: `port` + 1, the reference's SSL port).
   */
  tls?: { cert: string; key: string; port?: number | 'next' };
  /** How long one request may take to arrive, headers and body (node's requestTimeout). */
  requestTimeoutMs: number;
  /** How long the headers may take to arrive. */
  headersTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /**
   * Open connections at most (at the cap a new one closes the longest-idle one); 0: the soft descriptor
   * limit less a reserve (core/http/connections.ts).
   */
  maxConnections: number;
  /** A request body that receives nothing for this long closes its connection. */
  bodyIdleTimeoutMs: number;
  /** Bytes of request bodies held at once, in all and per caller address. */
  bodyMemoryBytes: number;
  bodyMemoryPerAddressBytes: number;
  /** Answer cross-origin (browser) calls; the deployment trigger turns it off. */
  cors: boolean;
  /** Origins browsers may call from with `legacyidauth`: exact origins, or `ui` (this node's own UI). */
  corsOrigins: string[];
}

/**
 * This node's UI, and the network gateway's UI, which calls nodes from the browser. The gateway origin is
 * an assumption (the reference's gateway UI host under the naming mapping); operators set their own.
 */
export const DEFAULT_CORS_ORIGINS = ['ui', 'https://home.runoncore.io'];

export interface NodeConfig {
  /** The listener this process serves: the manifests whose `listener:` is this name. */
  listener: string;
  /** Where that listener listens (the node API's port, or the deployment trigger's). */
  api: ListenerConfig;
  dataDir: string;
  manifestsDir: string;
  pluginsDir: string;
  initial: { legacyid: string };
  coreTeam: string[];
  plugins: Record<string, boolean>;
  log: { level: string; files?: { level: string; maxBytes: number } };
  queue: { concurrency: number; retentionSeconds: number };
  /** Watch the manifests folder and the plugin state file and apply changes without a restart. */
  watch: boolean;
  /** Ports of services beside the node on this machine that apps may not publish (core/services/own-ports.ts). */
  reservedPorts: { port: number; what: string }[];
  /** The file the config came from, for error messages; '(defaults)' when none. */
  source: string;
  [section: string]: unknown;
}

export const nodeConfigSchema = {
  type: 'object',
  properties: {
    api: {
      type: 'object',
      properties: {
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 16127 },
        host: { type: 'string', minLength: 1, default: '0.0.0.0' },
        tls: {
          type: 'object',
          properties: {
            cert: { type: 'string', minLength: 1 },
            key: { type: 'string', minLength: 1 },
            // Set: HTTP on api.port and HTTPS on this port (0: a free one); unset: HTTPS on api.port only.
            port: { type: ['integer', 'string'], minimum: 0, maximum: 65535, pattern: '^next$', errorMessage: 'must be a port (0 to 65535) or next' },
          },
          required: ['cert', 'key'],
          additionalProperties: false,
        },
        requestTimeoutMs: { type: 'integer', minimum: 1000, maximum: 3_600_000, default: 300_000 },
        headersTimeoutMs: { type: 'integer', minimum: 1000, maximum: 3_600_000, default: 60_000 },
        keepAliveTimeoutMs: { type: 'integer', minimum: 1000, maximum: 3_600_000, default: 65_000 },
        maxConnections: { type: 'integer', minimum: 0, default: 0 },
        cors: { type: 'boolean', default: true },
        bodyIdleTimeoutMs: { type: 'integer', minimum: 1000, maximum: 3_600_000, default: 10_000 },
        bodyMemoryBytes: { type: 'integer', minimum: 65536, default: 64 * 1024 * 1024 },
        bodyMemoryPerAddressBytes: { type: 'integer', minimum: 65536, default: 16 * 1024 * 1024 },
        corsOrigins: {
          type: 'array',
          // `null` is the origin of sandboxed frames and files: anyone can send it, so it is never allowed.
          items: { type: 'string', anyOf: [{ const: 'ui' }, { pattern: '^https?://[^/\\s]+$' }] },
          default: DEFAULT_CORS_ORIGINS,
        },
      },
      additionalProperties: false,
      default: {},
    },
    listener: { type: 'string', pattern: '^[a-z][a-z0-9-]*$', default: 'api' },
    env: {
      type: 'object',
      propertyNames: { pattern: '^[A-Z][A-Z0-9_]*$' },
      additionalProperties: {
        oneOf: [
          { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_.]*$' },
          { type: 'object', propertyNames: { pattern: '^[A-Za-z][A-Za-z0-9_.]*$' }, additionalProperties: { type: 'string' }, minProperties: 1 },
        ],
      },
      default: {},
    },
    dataDir: { type: 'string', minLength: 1, default: './data' },
    manifestsDir: { type: 'string', minLength: 1, default: path.join(REPO_ROOT, 'manifests') },
    pluginsDir: { type: 'string', minLength: 1, default: path.join(REPO_ROOT, 'plugins') },
    initial: {
      type: 'object',
      properties: { legacyid: { type: 'string', default: '' } },
      additionalProperties: false,
      default: {},
    },
    coreTeam: { type: 'array', items: { type: 'string', minLength: 1 }, default: DEFAULT_CORE_TEAM },
    plugins: { type: 'object', additionalProperties: { type: 'boolean' }, default: {} },
    log: {
      type: 'object',
      properties: {
        level: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info' },
        // The node's own level files under <dataDir>/logs (core/services/logfiles.ts); silent: none.
        files: {
          type: 'object',
          properties: {
            level: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info' },
            maxBytes: { type: 'integer', minimum: 1024, maximum: 1024 ** 4, default: 25 * 1024 * 1024 },
          },
          additionalProperties: false,
          default: {},
        },
      },
      additionalProperties: false,
      default: {},
    },
    queue: {
      type: 'object',
      properties: {
        concurrency: { type: 'integer', minimum: 1, maximum: 64, default: 2 },
        retentionSeconds: { type: 'integer', minimum: 1, default: 3600 },
      },
      additionalProperties: false,
      default: {},
    },
    watch: { type: 'boolean', default: true },
    // Services of this machine outside the node process, whose ports no app may publish: by default the
    // deployment trigger (its WEBHOOK_PORT; a separate process, so the node cannot read its port itself).
    reservedPorts: {
      type: 'array',
      items: {
        type: 'object',
        properties: { port: { type: 'integer', minimum: 1, maximum: 65535 }, what: { type: 'string', minLength: 1, maxLength: 200 } },
        required: ['port', 'what'],
        additionalProperties: false,
      },
      default: [{ port: 9001, what: 'the deployment trigger (WEBHOOK_PORT)' }],
    },
  },
  // Plugin sections (`daemon:`, `benchmark:`, ...) are objects validated by each plugin's own schema.
  additionalProperties: { type: 'object' },
} as const;

// Compiled by the build with the plugins' config schemas (core/built-validators.ts); compiling it here at
// module load cost every node start and every corectl run 55-75 ms of CPU (profiled).
const validate = () => validatorFor('config', nodeConfigSchema);

export class ConfigError extends Error {}

/**
 * Validate a config object (defaults filled in); throws ConfigError naming the source, key and reason
 * (`locate` turns the error into `file:line:col: key: reason` when the object came from a file).
 */
export function resolveConfig(raw: Record<string, unknown>, source = '(defaults)', locate?: (e: ErrorObject) => string): NodeConfig {
  const cfg = structuredClone(raw ?? {});
  const v = validate();
  if (!v(cfg)) {
    const err = v.errors![0];
    throw new ConfigError(locate ? locate(err) : `${source}: ${describeError('', err).text}`);
  }
  const out = cfg as unknown as NodeConfig;
  out.source = source;
  return out;
}

/** Env variables every host binds (a config file's `env:` adds its own). */
const BUILTIN_ENV: Record<string, string> = { CORENODE_PORT: 'api.port', CORENODE_DATA_DIR: 'dataDir' };

export interface LoadOptions {
  /** The config file; default CORENODE_CONFIG, else config/node.yaml when present, else none. */
  file?: string;
}

/**
 * Read a host's configuration the way `npm start` does: the built-in defaults, then the file, then the
 * environment variables bound to config keys (CORENODE_PORT, CORENODE_DATA_DIR, and the file's `env:` map,
 * whose values are a key path or `{key path: template}` with `{}` standing for the variable's value).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd(), opts: LoadOptions = {}): NodeConfig {
  let file = opts.file ?? env.CORENODE_CONFIG;
  if (!file && fs.existsSync(path.join(cwd, 'config/node.yaml'))) file = 'config/node.yaml';
  let raw: Record<string, unknown> = {};
  let src: YamlSource | undefined;
  if (file) {
    const abs = path.resolve(cwd, file);
    let text: string;
    try {
      text = fs.readFileSync(abs, 'utf8');
    } catch (e) {
      throw new ConfigError(`${file}: cannot be read (${(e as Error).message})`);
    }
    src = new YamlSource(text, file);
    const syntax = src.syntaxError();
    if (syntax) throw new ConfigError(syntax);
    const value = src.doc.toJS();
    if (value !== null && (typeof value !== 'object' || Array.isArray(value)))
      throw new ConfigError(`${file}: (root): must be a mapping of keys`);
    raw = value ?? {};
  }
  applyOverlay(raw, path.resolve(cwd, env.CORENODE_DATA_DIR || (typeof raw.dataDir === 'string' ? raw.dataDir : './data')));
  const fileEnv = raw.env && typeof raw.env === 'object' && !Array.isArray(raw.env) ? (raw.env as Record<string, unknown>) : {};
  const bindings = { ...BUILTIN_ENV, ...fileEnv };
  const applied: Record<string, string> = {}; // key path -> the variable that set it
  for (const [name, target] of Object.entries(bindings)) {
    const v = env[name];
    if (v === undefined || v === '') continue;
    const targets = typeof target === 'string' ? { [target]: '{}' } : (target as Record<string, string>);
    if (!targets || typeof targets !== 'object') continue; // the schema check below names a malformed `env:`
    for (const [keyPath, template] of Object.entries(targets)) {
      // Host keys are converted by their type here; a plugin's keys are strings until its schema checks them.
      setPath(raw, keyPath, fromEnvText(name, typeAt(keyPath), template.replaceAll('{}', v)));
      applied[keyPath] = name;
    }
  }
  let cfg: NodeConfig;
  try {
    cfg = resolveConfig(raw, file ?? '(defaults)', src && ((e) => src.locate(e)));
  } catch (e) {
    // An error about a key an env variable set names the variable, not the file.
    const key = Object.keys(applied).find((k) => (e as Error).message.includes(`: ${k}:`));
    if (key) throw new ConfigError(`${applied[key]}: ${(e as Error).message.slice((e as Error).message.indexOf(`: ${key}:`) + key.length + 4)}`);
    throw e;
  }
  cfg.dataDir = path.resolve(cwd, cfg.dataDir);
  cfg.manifestsDir = path.resolve(cwd, cfg.manifestsDir);
  cfg.pluginsDir = path.resolve(cwd, cfg.pluginsDir);
  return cfg;
}

/** The keys the operator may change through the API (adjustapiport, adjustrouterip, adjustchainaccount). */
export const OVERLAY_KEYS = ['api.port', 'node.routerIp', 'node.chainAccount'] as const;
export const OVERLAY_FILE = 'operator-overlay.json';

/**
 * The operator overlay `<dataDir>/operator-overlay.json`: data (`{"api.port": 16137}`), never code, written by
 * the node's adjust routes and applied at the next start over the config file (env variables still win).
 * Keys outside OVERLAY_KEYS are ignored; the schema check then judges the values like the file's.
 */
function applyOverlay(raw: Record<string, unknown>, dataDir: string): void {
  let overlay: unknown;
  try {
    overlay = JSON.parse(fs.readFileSync(path.join(dataDir, OVERLAY_FILE), 'utf8'));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new ConfigError(`${path.join(dataDir, OVERLAY_FILE)}: cannot be read (${(e as Error).message})`);
  }
  if (!overlay || typeof overlay !== 'object') return;
  for (const key of OVERLAY_KEYS) if (key in overlay) setPath(raw, key, (overlay as Record<string, unknown>)[key]);
}

function setPath(obj: Record<string, unknown>, keyPath: string, value: unknown): void {
  const keys = keyPath.split('.');
  let at = obj;
  for (const k of keys.slice(0, -1)) {
    if (!at[k] || typeof at[k] !== 'object') at[k] = {};
    at = at[k] as Record<string, unknown>;
  }
  at[keys[keys.length - 1]] = value;
}

/** The JSON Schema type of a host config key (`api.port` -> integer). */
function typeAt(keyPath: string): string | undefined {
  let s: any = nodeConfigSchema;
  for (const k of keyPath.split('.')) s = s?.properties?.[k];
  return keyPath.endsWith('.port') ? 'port' : s?.type;
}

/** An env variable's text as the type its key takes; errors name the variable. */
export function fromEnvText(name: string, type: string | undefined, text: string): unknown {
  const t = text.trim();
  if (type === 'port') {
    const n = Number(t);
    if (t === '' || !Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`${name}: must be an integer port, got '${text}'`);
    return n;
  }
  if (type === 'boolean') {
    if (/^(true|1|yes|on)$/i.test(t)) return true;
    if (/^(false|0|no|off)$/i.test(t)) return false;
    throw new ConfigError(`${name}: must be true or false, got '${text}'`);
  }
  if (type === 'integer' || type === 'number') {
    const n = Number(t);
    if (t === '' || !Number.isFinite(n)) throw new ConfigError(`${name}: must be a number, got '${text}'`);
    if (type === 'integer' && !Number.isInteger(n)) throw new ConfigError(`${name}: must be a whole number, got '${text}'`);
    return n;
  }
  return text;
}
