/** `npm start`: the node API on port 16127 with embedded defaults (store under ./data). */
import { loadConfig } from '../config.ts';
import { createNodeHost } from '../node-host.ts';
import { fatal, run } from './run.ts';

try {
  const config = loadConfig();
  const host = createNodeHost({ config });
  await run(host, config.api.port, config.api.host, 'node API').catch(fatal);
} catch (e) {
  fatal(e);
}
