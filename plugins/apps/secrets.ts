/**
 * The node's own secret key and values sealed with it (AES-256-GCM, a random 96-bit nonce per value; the key
 * is 32 random bytes in `<dataDir>/apps/secret.key`, mode 0600, made at first start): `sealed:v1:<base64>`.
 *
 * A specification carries no registry credentials (repoauth.ts refuses them: a specification is public), so
 * no spec value is sealed any more; what stays is opening a sealed value for a pull (Docker's auth config,
 * in memory only) and the redaction of any `repoauth` in an answer, the last line of defence should one
 * ever reach a record.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const PREFIX = 'sealed:v1:';
export const REDACTED = '[encrypted]';

export class Secrets {
  private constructor(private readonly key: Buffer) {}

  /** The node's key from `file`, made (0600) when missing. */
  static load(file: string): Secrets {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    try {
      fs.writeFileSync(file, crypto.randomBytes(32), { flag: 'wx', mode: 0o600 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const key = fs.readFileSync(file);
    if (key.length !== 32) throw new Error(`${file}: the apps secret key must be 32 bytes (it is ${key.length}); restore it or delete it (sealed repoauth values are then lost)`);
    return new Secrets(key);
  }

  static isSealed(v: unknown): v is string {
    return typeof v === 'string' && v.startsWith(PREFIX);
  }

  seal(plain: string): string {
    if (Secrets.isSealed(plain)) return plain;
    const iv = crypto.randomBytes(12);
    const c = crypto.createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([c.update(plain, 'utf8'), c.final()]);
    return PREFIX + Buffer.concat([iv, c.getAuthTag(), body]).toString('base64');
  }

  /** The plain value of a sealed one (a plain value passes through: records made before sealing). */
  open(v: string): string {
    if (!Secrets.isSealed(v)) return v;
    const raw = Buffer.from(v.slice(PREFIX.length), 'base64');
    const d = crypto.createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    d.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([d.update(raw.subarray(28)), d.final()]).toString('utf8');
  }

  /** A copy with every `repoauth` opened (the owner's decrypted view). */
  openSpec<T extends Record<string, any>>(spec: T): T {
    return mapRepoauth(spec, (v) => this.open(v));
  }
}

/** A copy of a specification as anyone may see it: every `repoauth` replaced by `[encrypted]`. */
export function redactSpec<T extends Record<string, any>>(spec: T): T {
  return mapRepoauth(spec, () => REDACTED);
}

function mapRepoauth<T extends Record<string, any>>(spec: T, fn: (v: string) => string): T {
  if (!spec || !Array.isArray(spec.compose) || !spec.compose.some((c: any) => typeof c?.repoauth === 'string' && c.repoauth)) return spec;
  return { ...spec, compose: spec.compose.map((c: any) => (typeof c?.repoauth === 'string' && c.repoauth ? { ...c, repoauth: fn(c.repoauth) } : c)) };
}
