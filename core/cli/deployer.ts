/** `npm run deployer`: the deployment trigger on WEBHOOK_PORT (9001), configured from env variables. */
import { createDeployerHost, deployerConfigFromEnv, describeStartError } from '../deployer-host.ts';
import { fatal, run } from './run.ts';

try {
  const config = deployerConfigFromEnv();
  const host = createDeployerHost({ config });
  // Request timeouts and connection caps are set by createDeployerHost before the server listens (with
  // WEBHOOK_TIMEOUT unset they default to 30000 ms: an undefined requestTimeout aborted node 30 s after start).
  await run(host, config.api.port, config.api.host, 'Webhook listener (deployment trigger)').catch((e) => fatal(describeStartError(e)));
} catch (e) {
  fatal(describeStartError(e));
}
