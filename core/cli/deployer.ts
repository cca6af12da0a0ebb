/** `npm run deployer`: the deployment trigger on WEBHOOK_PORT (9001), configured from env variables. */
import { createDeployerHost, deployerConfigFromEnv, describeStartError } from '../deployer-host.ts';
import { fatal, run } from './run.ts';

try {
  const config = deployerConfigFromEnv();
  const host = createDeployerHost({ config });
  await run(host, config.api.port, config.api.host, 'Webhook listener (deployment trigger)').catch((e) => fatal(describeStartError(e)));
  // WEBHOOK_TIMEOUT bounds how long one request may take to arrive (headers and body).
  // The env section holds only the variables that are set: with WEBHOOK_TIMEOUT unset this was undefined,
  // and an undefined requestTimeout aborts node's HTTP server (ConnectionsList::Expired) 30 s after start.
  const timeout = (config.deployer as { webhookTimeoutMs?: number }).webhookTimeoutMs ?? 30_000;
  if (host.server) {
    host.server.requestTimeout = timeout;
    host.server.headersTimeout = Math.min(timeout, 60_000);
  }
} catch (e) {
  fatal(describeStartError(e));
}
