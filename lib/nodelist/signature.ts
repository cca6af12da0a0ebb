/**
 * Node keys of the daemon's deterministic node list (facts §3.1 `legacynodeprivkey`, §4.6): Bitcoin-style
 * message signatures by a node's secp256k1 key, and whether a key is listed at an address. Shared by the
 * node plugin (bodies signed by another node) and the peers plugin (membership of the peer network).
 */
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import bitcoinMessage from 'bitcoinjs-message';
import { canonicalIp, hostOf } from '../net-addr/addr.ts';

interface Secp256k1 {
  recover(hash: Buffer, signature: Buffer, recovery: number, compressed?: boolean): Buffer;
  publicKeyConvert(key: Buffer, compressed?: boolean): Buffer;
  publicKeyCreate(privateKey: Buffer, compressed?: boolean): Uint8Array;
}
const secp256k1 = createRequire(import.meta.url)('secp256k1') as Secp256k1;

const BASE64_65 = /^[A-Za-z0-9+/]{87}=?$/;
export const PUBKEY = /^(02|03)[0-9a-fA-F]{64}$|^04[0-9a-fA-F]{128}$/;

/** Whether `signature` (base64, 65 bytes) over `message` was made with the key `pubKey` (hex, either form). */
export function signedBy(message: string, pubKey: string, signature: string): boolean {
  if (typeof signature !== 'string' || typeof pubKey !== 'string' || !BASE64_65.test(signature) || !PUBKEY.test(pubKey)) return false;
  const sig = Buffer.from(signature, 'base64');
  if (sig.length !== 65 || sig[0] < 27 || sig[0] > 42) return false;
  try {
    const flag = (sig[0] - 27) & 3;
    const recovered = secp256k1.recover(bitcoinMessage.magicHash(message), sig.subarray(1), flag, true);
    return Buffer.from(secp256k1.publicKeyConvert(Buffer.from(pubKey, 'hex'), true)).equals(Buffer.from(recovered));
  } catch {
    return false;
  }
}

export { hostOf };

export interface ListedNode {
  ip?: string;
  pubkey?: string;
}

/** Whether the list has `pubKey` at the host `ip` (any form of the same address). */
export function listedAt(list: unknown, pubKey: string, ip: string): boolean {
  const k = pubKey.toLowerCase();
  const host = canonicalIp(ip) ?? ip;
  return Array.isArray(list) && list.some((n: ListedNode) => typeof n?.pubkey === 'string' && n.pubkey.toLowerCase() === k && hostOf(String(n.ip ?? '')) === host);
}

/** The addresses the list gives `pubKey` (usually one). */
export function listedAddresses(list: unknown, pubKey: string): string[] {
  const k = pubKey.toLowerCase();
  if (!Array.isArray(list)) return [];
  return list.filter((n: ListedNode) => typeof n?.pubkey === 'string' && n.pubkey.toLowerCase() === k).map((n: ListedNode) => hostOf(String(n.ip ?? '')));
}

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

function base58check(s: string): Buffer | null {
  let n = 0n;
  for (const ch of s) {
    const v = B58.indexOf(ch);
    if (v < 0) return null;
    n = n * 58n + BigInt(v);
  }
  let hex = n.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  const lead = s.match(/^1*/)![0].length;
  const raw = Buffer.concat([Buffer.alloc(lead), Buffer.from(n === 0n ? '' : hex, 'hex')]);
  if (raw.length < 5) return null;
  const body = raw.subarray(0, -4);
  const sum = crypto.createHash('sha256').update(crypto.createHash('sha256').update(body).digest()).digest().subarray(0, 4);
  return sum.equals(raw.subarray(-4)) ? body : null;
}

export interface NodeSigner {
  /** The compressed public key, hex (as the node list shows it). */
  readonly pubKey: string;
  sign(message: string): string;
}

/** A node key from its WIF (as `legacynodeprivkey` holds it) or 64 hex characters; throws when it is neither. */
export function nodeSigner(secret: string): NodeSigner {
  let key: Buffer | null = null;
  if (/^[0-9a-fA-F]{64}$/.test(secret)) key = Buffer.from(secret, 'hex');
  else {
    const raw = base58check(secret.trim());
    // version byte, 32 key bytes, and 0x01 when the public key is compressed
    if (raw && (raw.length === 33 || (raw.length === 34 && raw[33] === 1))) key = raw.subarray(1, 33);
  }
  if (!key) throw new Error('the node key is neither a WIF private key nor 64 hex characters');
  const priv = key;
  const pubKey = Buffer.from(secp256k1.publicKeyCreate(priv, true)).toString('hex');
  return { pubKey, sign: (message) => bitcoinMessage.sign(message, priv, true).toString('base64') };
}
