import { configSchema as defineConfig } from '../../core/plugin-api.ts';

/**
 * The deployer's config section (`deployer:`). The service builds it from env variables (README lists them);
 * defaults and bounds live here, once.
 */
export interface DeployerConfig {
  /** DEPLOY_ROOT: releases/, logs/ and the repository cache live under it (absolute). */
  root: string;
  repoUrl: string;
  branch: string;
  appPort: number;
  projectType: 'auto' | 'node' | 'python' | 'static';
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
  debounceSeconds: number;
  /** Webhook requests per minute per IP; 0 = no limit. */
  rateLimitPerMinute: number;
  apiKey: string;
  keepReleases: number;
}

/** The environment variables the deployer's keys are bound to (spec: Configuration). */
export const configEnv: Record<string, keyof DeployerConfig> = {
  DEPLOY_ROOT: 'root',
  GIT_REPO_URL: 'repoUrl',
  GIT_BRANCH: 'branch',
  APP_PORT: 'appPort',
  PROJECT_TYPE: 'projectType',
  INSTALL_COMMAND: 'installCommand',
  BUILD_COMMAND: 'buildCommand',
  RUN_COMMAND: 'runCommand',
  FORCE_INSTALL: 'forceInstall',
  DEPLOYMENT_TIMEOUT: 'deploymentTimeoutSeconds',
  HEALTH_CHECK_RETRIES: 'healthCheckRetries',
  HEALTH_CHECK_DELAY: 'healthCheckDelaySeconds',
  WEBHOOK_SECRET: 'webhookSecret',
  WEBHOOK_SIGNATURE_VERIFY: 'signatureVerify',
  WEBHOOK_PATH: 'webhookPath',
  DEBOUNCE_DELAY: 'debounceSeconds',
  WEBHOOK_RATE_LIMIT: 'rateLimitPerMinute',
  API_KEY: 'apiKey',
  KEEP_RELEASES: 'keepReleases',
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
    projectType: { enum: ['auto', 'node', 'python', 'static'], default: 'auto' },
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
    debounceSeconds: { type: 'number', minimum: 0, maximum: 3600, default: 5 },
    rateLimitPerMinute: { type: 'integer', minimum: 0, default: 10 },
    apiKey: { type: 'string', default: '' },
    keepReleases: { type: 'integer', minimum: 1, maximum: 50, default: 3 },
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
