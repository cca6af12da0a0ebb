/**
 * The node's key pair (Ed25519, node:crypto): made once, kept as PEM under the node's data folder. A public
 * key travels as 64 hex characters (the raw 32 bytes). Ed25519 because signing and checking every frame
 * must be cheap: about 50 µs a check here, against about 1 ms for secp256k1 in pure JS.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const KEY_HEX = /^[0-9a-f]{64}$/;

export interface NodeKeys {
  /** Public key, 64 hex characters. */
  readonly publicKey: string;
  sign(data: string): string;
}

export function keysFrom(privateKey: crypto.KeyObject): NodeKeys {
  const raw = crypto.createPublicKey(privateKey).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  return {
    publicKey: raw.toString('hex'),
    sign: (data) => crypto.sign(null, Buffer.from(data), privateKey).toString('base64'),
  };
}

export function generateKeys(): NodeKeys {
  return keysFrom(crypto.generateKeyPairSync('ed25519').privateKey);
}

/** The key kept in `file` (mode 0600), made at first start. */
export function loadOrCreateKeys(file: string): NodeKeys {
  if (fs.existsSync(file)) return keysFrom(crypto.createPrivateKey(fs.readFileSync(file)));
  const { privateKey } = crypto.generateKeyPairSync('ed25519');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, privateKey.export({ format: 'pem', type: 'pkcs8' }), { mode: 0o600 });
  fs.renameSync(tmp, file);
  return keysFrom(privateKey);
}

const cache = new Map<string, crypto.KeyObject>();

export function isKey(k: unknown): k is string {
  return typeof k === 'string' && KEY_HEX.test(k);
}

/** Whether `sig` (base64) is `key`'s signature of `data`; never throws. */
export function verify(key: string, data: string, sig: string): boolean {
  if (!isKey(key) || typeof sig !== 'string' || sig.length !== 88) return false;
  try {
    let k = cache.get(key);
    if (!k) {
      k = crypto.createPublicKey({ key: Buffer.concat([SPKI_PREFIX, Buffer.from(key, 'hex')]), format: 'der', type: 'spki' });
      if (cache.size > 10_000) cache.clear();
      cache.set(key, k);
    }
    return crypto.verify(null, Buffer.from(data), k, Buffer.from(sig, 'base64'));
  } catch {
    return false;
  }
}

export const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest('hex');
