/**
 * Webhook authenticity (spec: Authentication 2; facts §9). HMAC-SHA256 of the exact raw body in
 * `X-Hub-Signature-256` (GitHub) or `X-Hub-Signature` (Bitbucket), the secret itself in `X-Gitlab-Token` /
 * `X-Lab-Token` (GitLab). Every comparison is constant-time over equal-length digests; a malformed header
 * is a plain failure, never an exception.
 */
import crypto from 'node:crypto';
import type { Provider } from './providers.ts';

type Headers = Record<string, string | string[] | undefined>;

export type Verdict = { ok: true } | { ok: false; reason: string };

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

export function tokenHeader(h: Headers): string | undefined {
  return first(h['x-gitlab-token']) ?? first(h['x-lab-token']);
}

function sameDigest(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/** Check `sha256=<64 hex>` against HMAC-SHA256(secret, raw). */
export function verifyHmac(secret: string, raw: Buffer, header: string | undefined): Verdict {
  if (!header) return { ok: false, reason: 'the X-Hub-Signature-256 header is missing' };
  const m = /^sha256=([0-9a-fA-F]{64})$/.exec(header.trim());
  if (!m) return { ok: false, reason: 'the signature header is not of the form sha256=<64 hex digits>' };
  const expected = crypto.createHmac('sha256', secret).update(raw).digest();
  return sameDigest(Buffer.from(m[1], 'hex'), expected) ? { ok: true } : { ok: false, reason: 'the signature does not match the body' };
}

/** The token equals the secret; compared as SHA-256 digests so neither length nor content leaks. */
export function verifyToken(secret: string, token: string | undefined): Verdict {
  if (token === undefined) return { ok: false, reason: 'the X-Gitlab-Token header is missing' };
  const h = (s: string) => crypto.createHash('sha256').update(s).digest();
  return sameDigest(h(token), h(secret)) ? { ok: true } : { ok: false, reason: 'the token does not match the secret' };
}

/**
 * The check a request must pass. The provider comes from the headers when they name one; otherwise a token
 * header means GitLab and anything else must carry an HMAC signature.
 */
export function verify(secret: string, provider: Provider | null, headers: Headers, raw: Buffer): Verdict {
  const token = tokenHeader(headers);
  if (provider === 'gitlab' || (provider === null && token !== undefined)) return verifyToken(secret, token);
  const sig256 = first(headers['x-hub-signature-256']);
  const sig = first(headers['x-hub-signature']);
  // GitHub sends both (sha1 legacy + sha256); Bitbucket sends sha256 in X-Hub-Signature. sha1 is not accepted.
  if (sig256 !== undefined) return verifyHmac(secret, raw, sig256);
  if (sig !== undefined && /^sha1=/i.test(sig.trim())) return { ok: false, reason: 'only sha256 signatures are accepted (X-Hub-Signature-256)' };
  return verifyHmac(secret, raw, sig);
}
