/**
 * adjustrouterip, adjustapiport and adjustchainaccount: the operator's values are stored as JSON data in
 * `<dataDir>/operator-overlay.json` (the host applies its keys over the config file at the next start;
 * core/config.ts OVERLAY_KEYS), never written into code. Each answer says a restart is needed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiError, type HandlerInput } from '../../core/plugin-api.ts';

/** The file name the host reads (core/config.ts OVERLAY_FILE). */
export const OVERLAY_FILE = 'operator-overlay.json';
const RESTART = 'A restart of CoreOS is necessary';

export function overlayHandlers(dataDir: string) {
  const file = path.join(dataDir, OVERLAY_FILE);
  function read(): Record<string, unknown> {
    try {
      const v = JSON.parse(fs.readFileSync(file, 'utf8'));
      return v && typeof v === 'object' && !Array.isArray(v) ? v : {};
    } catch {
      return {};
    }
  }
  /** Write-then-rename: a crash mid-write leaves the previous overlay, never half a file. */
  function set(key: string, value: unknown) {
    const next = { ...read(), [key]: value };
    fs.mkdirSync(dataDir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(next, null, 2) + '\n', { mode: 0o600 });
    fs.renameSync(tmp, file);
  }
  return {
    overlay: read,
    // Values checked by the manifest's input (an IP, an allowed port, the account's form, chain id 0 to 20).
    adjustrouterip({ values }: HandlerInput) {
      const ip = values.routerip as string | undefined;
      if (!ip) throw new ApiError(400, 'BadRequest', 'No ip specified.');
      set('node.routerIp', ip);
      return { message: `Router IP adjusted. ${RESTART}` };
    },
    adjustapiport({ values }: HandlerInput) {
      const port = values.apiport as number | undefined;
      if (port === undefined) throw new ApiError(400, 'BadRequest', 'No Port address specified.');
      set('api.port', port);
      return { message: `API Port adjusted. ${RESTART}` };
    },
    adjustchainaccount({ values }: HandlerInput) {
      const { account, chainid } = values as { account?: string; chainid?: number };
      if (!account) throw new ApiError(400, 'BadRequest', 'No chain account specified.');
      if (chainid === undefined) throw new ApiError(400, 'BadRequest', 'Chain id not valid; it is an integer from 0 to 20');
      set('node.chainAccount', { account, chainid });
      return { message: `Chain account adjusted. ${RESTART}` };
    },
  };
}
