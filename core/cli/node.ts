/** `npm start`: the node API on port 16127 with embedded defaults (store under ./data). */
import { loadConfig } from '../config.ts';
import { Host } from '../host.ts';
import { fatal, run } from './run.ts';

try {
  const config = loadConfig();
  const host = new Host({ config });
  await run(host, config.api.port, config.api.host, 'node API').catch(fatal);
} catch (e) {
  fatal(e);
}
