/**
 * Wallet ids: a P2PKH address (base58check, version byte 0, 26 to 35 characters per the spec) or an
 * ethereum address (`0x` and 40 hex digits). Nothing else is an id here: no script-hash, segwit or
 * multisig addresses, no raw public keys.
 */
import crypto from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
// ethers loads on the first Ethereum id, not at start: imported eagerly it cost the node about 14 MB of
// idle RSS and 200 ms of CPU at start (measured), and only Ethereum ids need it.
let ethersLib: typeof import('ethers') | undefined;
export const ethers = () => (ethersLib ??= require('ethers') as typeof import('ethers'));

export type IdKind = 'p2pkh' | 'ethereum';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const INDEX = new Map([...ALPHABET].map((c, i) => [c, i]));
const ETHEREUM = /^0x[0-9a-fA-F]{40}$/;

export const sha256 = (b: Buffer) => crypto.createHash('sha256').update(b).digest();
export const hash160 = (b: Buffer) => crypto.createHash('ripemd160').update(sha256(b)).digest();

export function base58Decode(s: string): Buffer | null {
  let n = 0n;
  for (const c of s) {
    const v = INDEX.get(c);
    if (v === undefined) return null;
    n = n * 58n + BigInt(v);
  }
  const bytes: number[] = [];
  while (n > 0n) {
    bytes.unshift(Number(n & 0xffn));
    n >>= 8n;
  }
  let zeros = 0;
  while (zeros < s.length && s[zeros] === '1') zeros++;
  return Buffer.from([...new Array(zeros).fill(0), ...bytes]);
}

export function base58Encode(b: Buffer): string {
  let n = BigInt('0x' + (b.toString('hex') || '0'));
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const byte of b) {
    if (byte !== 0) break;
    out = '1' + out;
  }
  return out;
}

/** The 20-byte key hash of a valid P2PKH address, else null (bad alphabet, checksum, version or length). */
export function p2pkhHash(address: string): Buffer | null {
  if (address.length < 26 || address.length > 35 || address[0] !== '1') return null;
  const raw = base58Decode(address);
  if (!raw || raw.length !== 25 || raw[0] !== 0) return null;
  const check = sha256(sha256(raw.subarray(0, 21))).subarray(0, 4);
  return check.equals(raw.subarray(21)) ? raw.subarray(1, 21) : null;
}

/** The P2PKH address of a public key (compressed or uncompressed SEC encoding). */
export function p2pkhAddress(publicKey: Buffer): string {
  const payload = Buffer.concat([Buffer.from([0]), hash160(publicKey)]);
  return base58Encode(Buffer.concat([payload, sha256(sha256(payload)).subarray(0, 4)]));
}

export function idKind(id: unknown): IdKind | null {
  if (typeof id !== 'string') return null;
  if (ETHEREUM.test(id)) return 'ethereum';
  return p2pkhHash(id) ? 'p2pkh' : null;
}

/**
 * The one spelling of an id: an ethereum address in its EIP-55 checksummed form (what wallets show), whatever
 * case it arrived in, so one wallet is one identity; a P2PKH address as it is (base58 is case-sensitive).
 * Anything else is returned unchanged (and then fails `idKind`).
 */
export function canonicalId<T>(id: T): T {
  return typeof id === 'string' && ETHEREUM.test(id) ? (ethers().getAddress(id.toLowerCase()) as T) : id;
}
