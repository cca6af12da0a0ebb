/**
 * The `apikey` auth strategy of /status and /logs (manifests/deployer.yaml `auth: apikey`): with API_KEY set,
 * `Authorization: Bearer <key>` or `Token <key>` (or the X-API-Key the reference's client sends) is required.
 * Compared as SHA-256 digests in constant time, so neither the length nor a prefix of the key leaks.
 */
import crypto from 'node:crypto';
import { reply, type AuthStrategy } from '../../core/plugin-api.ts';

const digest = (s: string) => crypto.createHash('sha256').update(s).digest();
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

export function apiKeyStrategy(apiKey: string): AuthStrategy {
  const expected = apiKey ? digest(apiKey) : null;
  return {
    check(headers) {
      if (!expected) return null;
      const m = /^(?:Bearer|Token)\s+(.+)$/i.exec(first(headers.authorization) ?? '');
      const given = m?.[1].trim() ?? first(headers['x-api-key']);
      if (given !== undefined && crypto.timingSafeEqual(digest(given), expected)) return null;
      return reply(401, { error: 'Unauthorized', message: 'Valid API key required' });
    },
  };
}
