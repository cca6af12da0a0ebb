/**
 * `npm run deployer`: the deployment trigger. The same host as the node API, configured by the shipped
 * profile (profiles/deployer.yaml: the `deployer` listener on WEBHOOK_PORT) and environment variables.
 */
import path from 'node:path';
import { REPO_ROOT, loadConfig } from '../config.ts';
import { Host } from '../host.ts';
import { fatal, run } from './run.ts';

try {
  const config = loadConfig(process.env, process.cwd(), { file: path.join(REPO_ROOT, 'profiles', 'deployer.yaml') });
  const host = new Host({ config });
  await run(host, config.api.port, config.api.host, 'Webhook listener (deployment trigger)').catch(fatal);
} catch (e) {
  fatal(e);
}
