/** `npm run deployer`: configuration entirely from env, validated at start with messages naming the variable. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createDeployerHost, deployerConfigFromEnv, describeStartError } from '../support/deployer.ts';
import { createAjv } from '../../core/manifest/schema.ts';
import { configSchema } from '../../plugins/deployer/config.ts';
import { Repo, freePort, nodeApp, runCli, tempDir, testEnv, waitFor } from './support.ts';

const BASE = { GIT_REPO_URL: '/srv/repo.git', APP_PORT: '3000', DEPLOY_ROOT: '/tmp/deployer-config-test' };

/** Start a host from env and return the start error's message (as the CLI prints it), or null. */
async function startError(env: Record<string, string>): Promise<string | null> {
  let host;
  try {
    host = createDeployerHost({ config: deployerConfigFromEnv({ ...env, DEPLOY_ROOT: tempDir(), LOG_LEVEL: 'silent' }) });
    await host.start();
    return null;
  } catch (e) {
    return describeStartError(e).message;
  } finally {
    await host?.close();
  }
}

describe('deployer configuration', function () {
  this.timeout(30_000);

  it('fills the spec defaults: port 9001, /webhook, 5 s debounce, 10 a minute, 30000 ms, branch main', async () => {
    const cfg = deployerConfigFromEnv(BASE);
    assert.equal(cfg.api.port, 9001);
    assert.equal(cfg.api.host, '0.0.0.0');
    assert.equal(cfg.dataDir, '/tmp/deployer-config-test/state');
    // The section gets its defaults from the plugin's schema, the way the host validates it.
    const section = structuredClone(cfg.deployer) as Record<string, unknown>;
    assert.ok(createAjv({ useDefaults: true }).compile(configSchema)(section));
    assert.deepEqual(
      { ...section, root: undefined },
      {
        root: undefined, repoUrl: '/srv/repo.git', appPort: 3000, branch: 'main', projectType: 'auto', installCommand: '', buildCommand: '', runCommand: '',
        forceInstall: false, deploymentTimeoutSeconds: 1800, healthCheckRetries: 3, healthCheckDelaySeconds: 10, webhookSecret: '', signatureVerify: false,
        webhookPath: '/webhook', webhookTimeoutMs: 30000, debounceSeconds: 5, rateLimitPerMinute: 10, apiKey: '', keepReleases: 3,
        projectPath: '', pollingIntervalSeconds: 0, skipHooks: false, hookTimeoutSeconds: 300, skipHealthCheck: false, gitToken: '', gitUsername: '',
        appUser: 'corenode-app', maxUploads: 2,
      },
    );
    // WEBHOOK_TIMEOUT and WEBHOOK_MAX_CONNECTIONS are the listener's (the host's) too.
    assert.equal(cfg.api.requestTimeoutMs, 30000);
    assert.equal(cfg.api.maxConnections, 256);
    const host = createDeployerHost({ config: { ...cfg, dataDir: tempDir(), log: { level: 'silent' } } });
    await host.start();
    try {
      assert.equal(host.routes.find((r) => r.spec.id === 'deployer.webhook')?.spec.path, '/webhook');
    } finally {
      await host.close();
      fs.rmSync(BASE.DEPLOY_ROOT, { recursive: true, force: true });
    }
  });

  it('refuses a missing or malformed variable, naming it', async () => {
    assert.throws(() => deployerConfigFromEnv({ APP_PORT: '3000' }), /^Error: GIT_REPO_URL: is required/);
    assert.throws(() => deployerConfigFromEnv({ GIT_REPO_URL: 'x' }), /APP_PORT: is required/);
    assert.throws(() => deployerConfigFromEnv({ ...BASE, DEBOUNCE_DELAY: 'soon' }), /DEBOUNCE_DELAY: must be a number, got 'soon'/);
    assert.throws(() => deployerConfigFromEnv({ ...BASE, WEBHOOK_SIGNATURE_VERIFY: 'maybe' }), /WEBHOOK_SIGNATURE_VERIFY: must be true or false/);
    assert.throws(() => deployerConfigFromEnv({ ...BASE, HEALTH_CHECK_RETRIES: '2.5' }), /HEALTH_CHECK_RETRIES: must be a whole number/);
    assert.throws(() => deployerConfigFromEnv({ ...BASE, WEBHOOK_PORT: '70000' }), /WEBHOOK_PORT: must be an integer port/);
    assert.throws(() => deployerConfigFromEnv({ ...BASE, LOG_LEVEL: 'chatty' }), /LOG_LEVEL: must be one of/);
    for (const p of ['no-slash', '/a b', '/../x', '/x/:id'])
      assert.throws(() => deployerConfigFromEnv({ ...BASE, WEBHOOK_PATH: p }), /WEBHOOK_PATH: must be a path such as \/webhook/, p);
  });

  it('refuses out-of-range values and verification without a secret when the service starts', async () => {
    assert.match((await startError({ ...BASE, HEALTH_CHECK_RETRIES: '50' }))!, /^HEALTH_CHECK_RETRIES: must be <= 10/);
    assert.match((await startError({ ...BASE, DEBOUNCE_DELAY: '-1' }))!, /^DEBOUNCE_DELAY: must be >= 0/);
    assert.match((await startError({ ...BASE, PROJECT_TYPE: 'cobol' }))!, /^PROJECT_TYPE: must be one of auto, node, python, static, go, rust, ruby, bun, java, php, dotnet/);
    assert.match((await startError({ ...BASE, PROJECT_PATH: '../x' }))!, /^PROJECT_PATH: must match/);
    assert.match((await startError({ ...BASE, POLLING_INTERVAL: '-5' }))!, /^POLLING_INTERVAL: must be >= 0/);
    assert.match((await startError({ ...BASE, HOOK_TIMEOUT: '0' }))!, /^HOOK_TIMEOUT: must be >= 1/);
    assert.match((await startError({ ...BASE, GIT_BRANCH: '-x' }))!, /^GIT_BRANCH: must match/);
    assert.match((await startError({ ...BASE, WEBHOOK_SIGNATURE_VERIFY: 'true' }))!, /WEBHOOK_SIGNATURE_VERIFY is true but WEBHOOK_SECRET is empty/);
    assert.match((await startError({ ...BASE, WEBHOOK_PATH: '/status' }))!, /WEBHOOK_PATH \/status is also the path of a status/);
    assert.match((await startError({ ...BASE, WEBHOOK_PORT: '3000' }))!, /APP_PORT 3000 is the service's own port/);
    assert.equal(await startError({ ...BASE, WEBHOOK_SIGNATURE_VERIFY: 'true', WEBHOOK_SECRET: 's' }), null);
  });

  it('npm run deployer: exits 1 with the reason on a bad env; starts, serves and stops on a good one', async () => {
    const bad = runCli({ ...BASE, WEBHOOK_SIGNATURE_VERIFY: 'true', DEPLOY_ROOT: tempDir() });
    assert.equal(await bad.exited, 1);
    assert.match(bad.output(), /corenode: WEBHOOK_SIGNATURE_VERIFY is true but WEBHOOK_SECRET is empty/);

    const repo = new Repo();
    repo.commit(nodeApp('v1'));
    const port = await freePort();
    const env = testEnv(repo, await freePort(), tempDir(), { WEBHOOK_PORT: String(port), LOG_LEVEL: 'info' });
    // A secret without verification works, with a warning at start.
    const good = runCli({ ...env, WEBHOOK_SECRET: 'set-but-unused' });
    try {
      await waitFor(() => /Webhook listener/.test(good.output()), 'the startup line');
      assert.match(good.output(), /WEBHOOK_SECRET is set but WEBHOOK_SIGNATURE_VERIFY is false: webhooks are NOT verified/);
      const health = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.json());
      assert.equal(health.app_port, Number(env.APP_PORT));
      good.child.kill('SIGTERM');
      assert.equal(await good.exited, 0);
    } finally {
      good.child.kill('SIGKILL');
      repo.remove();
    }
  });
});
