/**
 * Node configuration: built-in defaults, then the YAML file (`CORENODE_CONFIG`, else `config/node.yaml` when
 * present), then the env overrides `CORENODE_PORT` and `CORENODE_DATA_DIR`. A bad file is refused at start
 * with the file, the key and the reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ErrorObject } from 'ajv';
import { createAjv, describeError } from './manifest/schema.ts';
import { YamlSource } from './manifest/yaml-source.ts';

import { REPO_ROOT } from './paths.ts';

export { REPO_ROOT };

/** The vendor team and support ids (reference §2.7); operators may extend the list with `coreTeam`. */
export const DEFAULT_CORE_TEAM = ['1hjy4bCYBJr4mny4zCE85J94RXa8W6q37', '16iJqiVbHptCx87q6XQwNpKdgEZnFtKcyP'];

export interface NodeConfig {
  api: { port: number; host: string; tls?: { cert: string; key: string } };
  dataDir: string;
  manifestsDir: string;
  pluginsDir: string;
  initial: { legacyid: string };
  coreTeam: string[];
  plugins: Record<string, boolean>;
  log: { level: string };
  queue: { concurrency: number; retentionSeconds: number };
  /** Watch the manifests folder and the plugin state file and apply changes without a restart. */
  watch: boolean;
  /** The file the config came from, for error messages; '(defaults)' when none. */
  source: string;
  [section: string]: unknown;
}

const schema = {
  type: 'object',
  properties: {
    api: {
      type: 'object',
      properties: {
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 16127 },
        host: { type: 'string', minLength: 1, default: '0.0.0.0' },
        tls: {
          type: 'object',
          properties: { cert: { type: 'string', minLength: 1 }, key: { type: 'string', minLength: 1 } },
          required: ['cert', 'key'],
          additionalProperties: false,
        },
      },
      additionalProperties: false,
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
      properties: { level: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info' } },
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
  },
  // Plugin sections (`daemon:`, `benchmark:`, ...) are objects validated by each plugin's own schema.
  additionalProperties: { type: 'object' },
} as const;

// The schema above is fixed (and covered by the config tests): checking it against JSON Schema's own
// meta-schema at every start cost about 22 ms of CPU (measured), for nothing.
const validate = createAjv({ useDefaults: true, validateSchema: false }).compile(schema);

export class ConfigError extends Error {}

/**
 * Validate a config object (defaults filled in); throws ConfigError naming the source, key and reason
 * (`locate` turns the error into `file:line:col: key: reason` when the object came from a file).
 */
export function resolveConfig(raw: Record<string, unknown>, source = '(defaults)', locate?: (e: ErrorObject) => string): NodeConfig {
  const cfg = structuredClone(raw ?? {});
  if (!validate(cfg)) {
    const err = validate.errors![0];
    throw new ConfigError(locate ? locate(err) : `${source}: ${describeError('', err).text}`);
  }
  const out = cfg as unknown as NodeConfig;
  out.source = source;
  return out;
}

/** Read the node configuration the way `npm start` does. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): NodeConfig {
  let file = env.CORENODE_CONFIG;
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
  if (env.CORENODE_PORT !== undefined) {
    const port = Number(env.CORENODE_PORT);
    if (!Number.isInteger(port) || port < 0 || port > 65535)
      throw new ConfigError(`CORENODE_PORT: must be an integer port, got '${env.CORENODE_PORT}'`);
    raw.api = { ...(raw.api as object), port };
  }
  if (env.CORENODE_DATA_DIR) raw.dataDir = env.CORENODE_DATA_DIR;
  const cfg = resolveConfig(raw, file ?? '(defaults)', src && ((e) => src.locate(e)));
  cfg.dataDir = path.resolve(cwd, cfg.dataDir);
  cfg.manifestsDir = path.resolve(cwd, cfg.manifestsDir);
  cfg.pluginsDir = path.resolve(cwd, cfg.pluginsDir);
  return cfg;
}
