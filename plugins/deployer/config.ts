/**
 * The deployer's config section (`deployer:`), bound to the environment variables of the spec (`configEnv`,
 * README lists them); defaults and bounds live here, once. The listener's keys (WEBHOOK_PORT, WEBHOOK_HOST,
 * WEBHOOK_TIMEOUT, WEBHOOK_MAX_CONNECTIONS) are the host's, bound in profiles/deployer.yaml.
 */
import { configSchema as defineConfig } from '../../core/plugin-api.ts';

export interface DeployerConfig {
  /** DEPLOY_ROOT: releases/, logs/ and the repository cache live under it (resolved at setup). */
  root: string;
  repoUrl: string;
  branch: string;
  appPort: number;
  projectType: 'auto' | (typeof PROJECT_TYPES)[number];
  /** Operator shell commands; '' = the project type's default. */
  installCommand: string;
  buildCommand: string;
  runCommand: string;
  forceInstall: boolean;
  deploymentTimeoutSeconds: number;
  healthCheckRetries: number;
  healthCheckDelaySeconds: number;
  webhookSecret: string;
  signatureVerify: boolean;
  webhookPath: string;
  /** WEBHOOK_TIMEOUT also bounds how long a webhook waits for an upload slot. */
  webhookTimeoutMs: number;
  debounceSeconds: number;
  /** Webhook requests per minute per IP; 0 = no limit. */
  rateLimitPerMinute: number;
  apiKey: string;
  keepReleases: number;
  /** PROJECT_PATH: the app's folder inside the repository (monorepos); '' = the root. */
  projectPath: string;
  /** POLLING_INTERVAL: seconds between fetches of the branch head (0 = webhooks only). */
  pollingIntervalSeconds: number;
  skipHooks: boolean;
  hookTimeoutSeconds: number;
  skipHealthCheck: boolean;
  /** GIT_TOKEN / GIT_USERNAME: HTTP credentials for a private repository (never in argv, logs or children). */
  gitToken: string;
  gitUsername: string;
  /** APP_USER: the unprivileged user builds and the app run as when the service runs as root. */
  appUser: string;
  /** Webhook bodies read at once; the others wait (bounded) or get 503. */
  maxUploads: number;
}

export const PROJECT_TYPES = ['node', 'python', 'static', 'go', 'rust', 'ruby', 'bun', 'java', 'php', 'dotnet'] as const;

/** The environment variables the deployer's keys are bound to (spec: Configuration). */
export const configEnv: Record<string, keyof DeployerConfig> = {
  DEPLOY_ROOT: 'root',
  GIT_REPO_URL: 'repoUrl',
  GIT_BRANCH: 'branch',
  APP_PORT: 'appPort',
  PROJECT_TYPE: 'projectType',
  PROJECT_PATH: 'projectPath',
  INSTALL_COMMAND: 'installCommand',
  BUILD_COMMAND: 'buildCommand',
  RUN_COMMAND: 'runCommand',
  FORCE_INSTALL: 'forceInstall',
  DEPLOYMENT_TIMEOUT: 'deploymentTimeoutSeconds',
  HEALTH_CHECK_RETRIES: 'healthCheckRetries',
  HEALTH_CHECK_DELAY: 'healthCheckDelaySeconds',
  SKIP_HEALTH_CHECK: 'skipHealthCheck',
  WEBHOOK_SECRET: 'webhookSecret',
  WEBHOOK_SIGNATURE_VERIFY: 'signatureVerify',
  WEBHOOK_PATH: 'webhookPath',
  WEBHOOK_TIMEOUT: 'webhookTimeoutMs',
  DEBOUNCE_DELAY: 'debounceSeconds',
  WEBHOOK_RATE_LIMIT: 'rateLimitPerMinute',
  WEBHOOK_MAX_UPLOADS: 'maxUploads',
  API_KEY: 'apiKey',
  KEEP_RELEASES: 'keepReleases',
  POLLING_INTERVAL: 'pollingIntervalSeconds',
  SKIP_HOOKS: 'skipHooks',
  HOOK_TIMEOUT: 'hookTimeoutSeconds',
  GIT_TOKEN: 'gitToken',
  GIT_USERNAME: 'gitUsername',
  APP_USER: 'appUser',
};

export const configSchema = defineConfig<DeployerConfig>({
  type: 'object',
  properties: {
    // Relative to the working folder of the service.
    root: { type: 'string', minLength: 1, default: './deploy' },
    repoUrl: { type: 'string', minLength: 1, pattern: '^[^-\\s]\\S*$' },
    // A ref name git accepts as a branch: no leading dash, no '..', no spaces or control characters.
    branch: { type: 'string', default: 'main', pattern: '^(?!-)(?!.*\\.\\.)(?!.*//)[A-Za-z0-9._/-]+(?<!\\.lock)(?<![/.])$' },
    appPort: { type: 'integer', minimum: 1, maximum: 65535 },
    projectType: { enum: ['auto', ...PROJECT_TYPES], default: 'auto' },
    installCommand: { type: 'string', default: '' },
    buildCommand: { type: 'string', default: '' },
    runCommand: { type: 'string', default: '' },
    forceInstall: { type: 'boolean', default: false },
    deploymentTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 7200, default: 1800 },
    healthCheckRetries: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
    healthCheckDelaySeconds: { type: 'number', minimum: 0, maximum: 60, default: 10 },
    webhookSecret: { type: 'string', default: '' },
    signatureVerify: { type: 'boolean', default: false },
    webhookPath: {
      type: 'string',
      default: '/webhook',
      pattern: '^(/(?!\\.\\.?(/|$))[A-Za-z0-9_.~-]+)+$',
      errorMessage: 'must be a path such as /webhook (letters, digits, _ . ~ - between slashes)',
    },
    webhookTimeoutMs: { type: 'integer', minimum: 1000, maximum: 600000, default: 30000 },
    debounceSeconds: { type: 'number', minimum: 0, maximum: 3600, default: 5 },
    rateLimitPerMinute: { type: 'integer', minimum: 0, default: 10 },
    apiKey: { type: 'string', default: '' },
    keepReleases: { type: 'integer', minimum: 1, maximum: 50, default: 3 },
    // A relative folder without '..' parts: the checkout is the boundary.
    projectPath: { type: 'string', default: '', pattern: '^(?!/)(?!.*(^|/)\\.\\.(/|$))[A-Za-z0-9._/@+-]*$' },
    pollingIntervalSeconds: { type: 'integer', minimum: 0, maximum: 86400, default: 0 },
    skipHooks: { type: 'boolean', default: false },
    hookTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 300 },
    skipHealthCheck: { type: 'boolean', default: false },
    gitToken: { type: 'string', default: '' },
    gitUsername: { type: 'string', default: '' },
    appUser: { type: 'string', default: 'corenode-app', pattern: '^[a-z_][a-z0-9_-]{0,31}$' },
    maxUploads: { type: 'integer', minimum: 1, maximum: 64, default: 2 },
  },
  required: ['repoUrl', 'appPort'],
  additionalProperties: false,
});

/** Cross-field rules the schema cannot say; returns the reason or null. */
export function configProblem(c: DeployerConfig): string | null {
  if (c.signatureVerify && !c.webhookSecret)
    return 'WEBHOOK_SIGNATURE_VERIFY is true but WEBHOOK_SECRET is empty: set the secret the git host signs with, or turn verification off';
  if (['/status', '/health'].includes(c.webhookPath) || c.webhookPath.startsWith('/logs/'))
    return `WEBHOOK_PATH ${c.webhookPath} is also the path of a status, health or logs route; choose another`;
  return null;
}

/** Warnings at start for settings that work but are probably not meant. */
export function configWarnings(c: DeployerConfig): string[] {
  const w: string[] = [];
  if (c.webhookSecret && !c.signatureVerify)
    w.push('WEBHOOK_SECRET is set but WEBHOOK_SIGNATURE_VERIFY is false: webhooks are NOT verified; set WEBHOOK_SIGNATURE_VERIFY=true');
  if (c.pollingIntervalSeconds > 0 && c.pollingIntervalSeconds < 60)
    w.push(`POLLING_INTERVAL ${c.pollingIntervalSeconds} s is below the documented 60 s: every poll is a git fetch`);
  if (c.skipHealthCheck) w.push('SKIP_HEALTH_CHECK is true: a release that does not answer still goes live (testing only)');
  if (c.gitToken && !/^https?:\/\//.test(c.repoUrl)) w.push('GIT_TOKEN is set but GIT_REPO_URL is not an http(s) URL: the token is not used');
  return w;
}
