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
  webhookTimeoutMs: number;
  debounceSeconds: number;
  /** Webhook requests per minute per IP; 0 = no limit. */
  rateLimitPerMinute: number;
  apiKey: string;
  keepReleases: number;
}

export const configSchema = {
  type: 'object',
  properties: {
    root: { type: 'string', minLength: 1 },
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
    webhookPath: { type: 'string', default: '/webhook', pattern: '^(/(?!\\.\\.?(/|$))[A-Za-z0-9_.~-]+)+$' },
    webhookTimeoutMs: { type: 'integer', minimum: 1000, maximum: 600000, default: 30000 },
    debounceSeconds: { type: 'number', minimum: 0, maximum: 3600, default: 5 },
    rateLimitPerMinute: { type: 'integer', minimum: 0, default: 10 },
    apiKey: { type: 'string', default: '' },
    keepReleases: { type: 'integer', minimum: 1, maximum: 50, default: 3 },
  },
  required: ['root', 'repoUrl', 'appPort'],
  additionalProperties: false,
} as const;

/** Cross-field rules the schema cannot say; returns the reason or null. */
export function configProblem(c: DeployerConfig): string | null {
  if (c.signatureVerify && !c.webhookSecret)
    return 'WEBHOOK_SIGNATURE_VERIFY is true but WEBHOOK_SECRET is empty: set the secret the git host signs with, or turn verification off';
  if (['/status', '/health'].includes(c.webhookPath) || c.webhookPath.startsWith('/logs/'))
    return `WEBHOOK_PATH ${c.webhookPath} is also the path of a status, health or logs route; choose another`;
  return null;
}
