/**
 * The deployment trigger: a host serving the `deployer` manifests, configured entirely from env variables
 * (spec: deploy-trigger.md, Configuration). Env values are converted here; defaults and bounds are the
 * deployer plugin's config schema, whose messages are given back under the env variable's name.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { Host, type HostOptions } from './host.ts';
import { ConfigError, REPO_ROOT, resolveConfig, type NodeConfig } from './config.ts';

type Kind = 'string' | 'int' | 'number' | 'bool';

/** Env variable -> key of the `deployer:` section, and how its text is read. */
export const DEPLOYER_ENV: ReadonlyArray<{ env: string; key: string; kind: Kind }> = [
  { env: 'GIT_REPO_URL', key: 'repoUrl', kind: 'string' },
  { env: 'GIT_BRANCH', key: 'branch', kind: 'string' },
  { env: 'APP_PORT', key: 'appPort', kind: 'int' },
  { env: 'PROJECT_TYPE', key: 'projectType', kind: 'string' },
  { env: 'INSTALL_COMMAND', key: 'installCommand', kind: 'string' },
  { env: 'BUILD_COMMAND', key: 'buildCommand', kind: 'string' },
  { env: 'RUN_COMMAND', key: 'runCommand', kind: 'string' },
  { env: 'FORCE_INSTALL', key: 'forceInstall', kind: 'bool' },
  { env: 'DEPLOYMENT_TIMEOUT', key: 'deploymentTimeoutSeconds', kind: 'int' },
  { env: 'HEALTH_CHECK_RETRIES', key: 'healthCheckRetries', kind: 'int' },
  { env: 'HEALTH_CHECK_DELAY', key: 'healthCheckDelaySeconds', kind: 'number' },
  { env: 'WEBHOOK_SECRET', key: 'webhookSecret', kind: 'string' },
  { env: 'WEBHOOK_SIGNATURE_VERIFY', key: 'signatureVerify', kind: 'bool' },
  { env: 'WEBHOOK_PATH', key: 'webhookPath', kind: 'string' },
  { env: 'WEBHOOK_TIMEOUT', key: 'webhookTimeoutMs', kind: 'int' },
  { env: 'DEBOUNCE_DELAY', key: 'debounceSeconds', kind: 'number' },
  { env: 'WEBHOOK_RATE_LIMIT', key: 'rateLimitPerMinute', kind: 'int' },
  { env: 'API_KEY', key: 'apiKey', kind: 'string' },
  { env: 'KEEP_RELEASES', key: 'keepReleases', kind: 'int' },
  { env: 'PROJECT_PATH', key: 'projectPath', kind: 'string' },
  { env: 'POLLING_INTERVAL', key: 'pollingIntervalSeconds', kind: 'int' },
  { env: 'SKIP_HOOKS', key: 'skipHooks', kind: 'bool' },
  { env: 'HOOK_TIMEOUT', key: 'hookTimeoutSeconds', kind: 'int' },
  { env: 'SKIP_HEALTH_CHECK', key: 'skipHealthCheck', kind: 'bool' },
  { env: 'GIT_TOKEN', key: 'gitToken', kind: 'string' },
  { env: 'GIT_USERNAME', key: 'gitUsername', kind: 'string' },
  { env: 'APP_USER', key: 'appUser', kind: 'string' },
  { env: 'WEBHOOK_MAX_CONNECTIONS', key: 'maxConnections', kind: 'int' },
  { env: 'WEBHOOK_MAX_UPLOADS', key: 'maxUploads', kind: 'int' },
];

const SOURCE = 'environment';

function convert(env: string, kind: Kind, text: string): unknown {
  const t = text.trim();
  if (kind === 'string') return text;
  if (kind === 'bool') {
    if (/^(true|1|yes|on)$/i.test(t)) return true;
    if (/^(false|0|no|off)$/i.test(t)) return false;
    throw new ConfigError(`${env}: must be true or false, got '${text}'`);
  }
  const n = Number(t);
  if (t === '' || !Number.isFinite(n)) throw new ConfigError(`${env}: must be a number, got '${text}'`);
  if (kind === 'int' && !Number.isInteger(n)) throw new ConfigError(`${env}: must be a whole number, got '${text}'`);
  return n;
}

/** The host config of `npm run deployer`, from env variables; throws ConfigError naming the variable. */
export function deployerConfigFromEnv(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): NodeConfig {
  const root = path.resolve(cwd, env.DEPLOY_ROOT || './deploy');
  const section: Record<string, unknown> = { root };
  for (const { env: name, key, kind } of DEPLOYER_ENV) {
    const v = env[name];
    // Unset or empty keeps the default (an empty secret or key is the default anyway).
    if (v !== undefined && v !== '') section[key] = convert(name, kind, v);
  }
  if (!section.repoUrl) throw new ConfigError('GIT_REPO_URL: is required (the repository to deploy)');
  if (section.appPort === undefined) throw new ConfigError('APP_PORT: is required (the port the application listens on)');
  // Checked here, not only by the plugin: the path goes into the generated manifest before the plugin loads.
  if (section.webhookPath !== undefined && !/^(\/(?!\.\.?(\/|$))[A-Za-z0-9_.~-]+)+$/.test(section.webhookPath as string))
    throw new ConfigError(`WEBHOOK_PATH: must be a path such as /webhook (letters, digits, _ . ~ - between slashes), got '${section.webhookPath}'`);
  const port = env.WEBHOOK_PORT ? convert('WEBHOOK_PORT', 'int', env.WEBHOOK_PORT) : 9001;
  if ((port as number) < 0 || (port as number) > 65535) throw new ConfigError(`WEBHOOK_PORT: must be a port (0-65535), got '${env.WEBHOOK_PORT}'`);
  const raw: Record<string, unknown> = {
    api: { port, host: env.WEBHOOK_HOST || '0.0.0.0' },
    dataDir: path.join(root, 'state'),
    watch: false,
    deployer: section,
  };
  if (env.LOG_LEVEL) raw.log = { level: env.LOG_LEVEL };
  try {
    return resolveConfig(raw, SOURCE);
  } catch (e) {
    throw new ConfigError(envNames((e as Error).message.replace('log.level', 'LOG_LEVEL').replace('api.host', 'WEBHOOK_HOST')));
  }
}

/** `environment: deployer.appPort: must be <= 65535` -> `APP_PORT: must be <= 65535`. */
export function envNames(message: string): string {
  let out = message.startsWith(`${SOURCE}: `) ? message.slice(SOURCE.length + 2) : message;
  for (const { env, key } of DEPLOYER_ENV) out = out.replace(new RegExp(`\\bdeployer\\.${key}\\b`, 'g'), env);
  return out;
}

/**
 * The host serves a copy of manifests/deployer.yaml whose webhook route has the configured path (the
 * manifest's path is static; WEBHOOK_PATH is not), written to `<dataDir>/manifests/`.
 */
function writeManifest(config: NodeConfig, sourceDir: string): string {
  const webhookPath = ((config.deployer as Record<string, unknown> | undefined)?.webhookPath as string | undefined) ?? '/webhook';
  const doc = YAML.parseDocument(fs.readFileSync(path.join(sourceDir, 'deployer.yaml'), 'utf8'));
  const routes = doc.get('routes') as YAML.YAMLSeq<YAML.YAMLMap>;
  const webhook = routes.items.find((r) => r.get('id') === 'deployer.webhook');
  if (!webhook) throw new ConfigError(`${sourceDir}/deployer.yaml: route deployer.webhook is missing`);
  webhook.set('path', webhookPath);
  const dir = path.join(config.dataDir, 'manifests');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'deployer.yaml'), `# Generated at start from ${path.join(sourceDir, 'deployer.yaml')}; edits here are overwritten.\n${doc.toString()}`);
  return dir;
}

/**
 * Server limits of a service on a public address: a request must arrive whole within WEBHOOK_TIMEOUT (node
 * checks its request and header timeouts only every `connectionsCheckingInterval`, 30 s by default, which cut
 * slow senders at about twice the setting: checked 10 times per timeout here), idle keep-alive
 * connections go after 5 s, and at most WEBHOOK_MAX_CONNECTIONS are open at once.
 */
function tuneServer(section: Record<string, unknown>) {
  const timeout = (section.webhookTimeoutMs as number | undefined) ?? 30_000;
  const maxConnections = (section.maxConnections as number | undefined) ?? 256;
  return (server: import('node:http').Server) => {
    server.requestTimeout = timeout;
    server.headersTimeout = Math.min(timeout, 60_000);
    // A constructor option, read when the server starts listening (node 20's setupConnectionsTracking).
    (server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval = Math.max(50, Math.min(1000, Math.floor(timeout / 10)));
    server.keepAliveTimeout = Math.min(5000, timeout);
    server.maxConnections = maxConnections;
    server.maxHeadersCount = 200;
  };
}

export function createDeployerHost(opts: Omit<HostOptions, 'service' | 'builtins'>): Host {
  const sourceDir = opts.config.manifestsDir ?? path.join(REPO_ROOT, 'manifests');
  const config = { ...opts.config, manifestsDir: writeManifest(opts.config, sourceDir) };
  const section = ((config as { deployer?: unknown }).deployer ?? {}) as Record<string, unknown>;
  // No CORS: the trigger is called by git hosts and scripts, never by a browser page (a cross-site page must
  // not post webhooks or read /status and /logs with a visitor's network position).
  return new Host({ ...opts, config, service: 'deployer', cors: false, onServer: tuneServer(section) as HostOptions['onServer'] });
}

/** Start errors (a bad config section, a refused setup) under the env variable's name. */
export function describeStartError(e: unknown): Error {
  return new Error(envNames((e as Error).message ?? String(e)));
}
