/**
 * The hardened node OS routes (spec: Other routes): HTTPS only (the host answers 403 over plain HTTP), and
 * only on a node that runs the hardened OS (else 501, as the reference). The node relays to the OS's config
 * daemon over loopback HTTP (`node.hardened.configDaemonUrl`): `POST /challenge {ip}` answers
 * `{challenge}`; `POST /configupdate {ip, challenge, encryptedChallenge, signature, configData}` answers
 * 200, or 401 when the signature or challenge does not hold.
 */
import { ApiError, type HandlerInput } from '../../core/plugin-api.ts';
import type { NodeConfig } from './settings.ts';

const MAX_CONFIG = 16 * 1024;

export function hardenedHandlers(config: NodeConfig) {
  async function ask(path: string, body: unknown): Promise<{ status: number; data: any }> {
    if (!config.hardenedOs) throw new ApiError(501, 'NotImplemented', 'This node does not run the hardened node OS');
    let res: Response;
    try {
      res = await fetch(new URL(path, config.hardened.configDaemonUrl), {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
        signal: AbortSignal.timeout(config.hardened.timeoutMs),
        redirect: 'error',
      });
    } catch (e) {
      throw new ApiError(502, 'BadGateway', `The config daemon cannot be reached (${(e as Error).name === 'TimeoutError' ? 'timeout' : ((e as { cause?: { code?: string } }).cause?.code ?? 'error')})`);
    }
    const text = await res.text();
    let data: unknown = null;
    try {
      data = text ? JSON.parse(text.slice(0, 64 * 1024)) : null;
    } catch {
      throw new ApiError(502, 'BadGateway', `The config daemon answered HTTP ${res.status} without JSON`);
    }
    return { status: res.status, data };
  }

  return {
    async authchallenge({ ip }: HandlerInput) {
      if (!ip) throw new ApiError(400, 'BadRequest', 'The caller has no address');
      const { status, data } = await ask('challenge', { ip });
      if (status !== 200 || typeof data?.challenge !== 'string') throw new ApiError(502, 'BadGateway', `The config daemon gave no challenge (HTTP ${status})`);
      return { challenge: data.challenge };
    },
    async configsync({ ip, values: b }: HandlerInput) {
      // Each given field's form is checked by the manifest's input; each one is needed.
      for (const k of ['challenge', 'encryptedChallenge', 'signature']) if (b[k] === undefined) throw new ApiError(400, 'BadRequest', `${k} must be a non-empty string`);
      const cd = b.configData;
      if (cd === undefined) throw new ApiError(400, 'BadRequest', 'configData must be an object');
      if (JSON.stringify(cd).length > MAX_CONFIG) throw new ApiError(400, 'BadRequest', 'configData is larger than 16 KB');
      const { status, data } = await ask('configupdate', { ip, challenge: b.challenge, encryptedChallenge: b.encryptedChallenge, signature: b.signature, configData: cd });
      if (status === 401) throw new ApiError(401, 'Unauthorized', 'The config daemon did not accept the challenge or signature');
      if (status !== 200) throw new ApiError(502, 'BadGateway', `The config daemon refused the update (HTTP ${status}${data?.message ? `: ${String(data.message).slice(0, 200)}` : ''})`);
      return { message: 'Configuration synchronised' };
    },
  };
}
