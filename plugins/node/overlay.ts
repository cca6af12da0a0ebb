/**
 * adjustrouterip, adjustapiport and adjustchainaccount: the operator's values are stored as JSON data in
 * `<dataDir>/operator-overlay.json` (the host applies its keys over the config file at the next start;
 * core/config.ts OVERLAY_KEYS), never written into code. Each answer says a restart is needed.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ApiError, type HandlerInput } from '../../core/plugin-api.ts';
import { API_PORTS } from './settings.ts';

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
    adjustrouterip({ params }: HandlerInput) {
      const ip = String(params.routerip ?? '').trim();
      if (!ip) throw new ApiError(400, 'BadRequest', 'No ip specified.');
      if (!net.isIP(ip)) throw new ApiError(400, 'BadRequest', `Router IP ${ip.slice(0, 64)} is not an IP address`);
      set('node.routerIp', ip);
      return { message: `Router IP adjusted. ${RESTART}` };
    },
    adjustapiport({ params }: HandlerInput) {
      const raw = String(params.apiport ?? '').trim();
      if (!raw) throw new ApiError(400, 'BadRequest', 'No Port address specified.');
      const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
      if (!API_PORTS.includes(port)) throw new ApiError(400, 'BadRequest', `API Port not valid; allowed: ${API_PORTS.join(', ')}`);
      set('api.port', port);
      return { message: `API Port adjusted. ${RESTART}` };
    },
    adjustchainaccount({ params }: HandlerInput) {
      const account = String(params.account ?? '').trim();
      const chainRaw = String(params.chainid ?? '').trim();
      if (!account) throw new ApiError(400, 'BadRequest', 'No chain account specified.');
      if (!/^[A-Za-z0-9:_-]{1,128}$/.test(account)) throw new ApiError(400, 'BadRequest', 'Chain account not valid');
      const chainid = /^\d{1,2}$/.test(chainRaw) ? Number(chainRaw) : NaN;
      if (!(chainid >= 0 && chainid <= 20)) throw new ApiError(400, 'BadRequest', 'Chain id not valid; it is an integer from 0 to 20');
      set('node.chainAccount', { account, chainid });
      return { message: `Chain account adjusted. ${RESTART}` };
    },
  };
}
