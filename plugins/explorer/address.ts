/**
 * Address format checks that need no daemon: a base58check address (version byte + payload + 4-byte double
 * SHA-256 checksum) or a bech32/bech32m segwit address (BIP173/BIP350 checksum). Which network an address
 * belongs to is the daemon's call (`validateaddress`); this only refuses what cannot be an address at all.
 */
import { createHash } from 'node:crypto';

const B58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const B58_INDEX = new Map([...B58].map((c, i) => [c, i]));
const BECH32 = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const BECH32_INDEX = new Map([...BECH32].map((c, i) => [c, i]));

function sha256d(b: Buffer): Buffer {
  return createHash('sha256').update(createHash('sha256').update(b).digest()).digest();
}

export function isBase58Check(s: string): boolean {
  if (s.length < 26 || s.length > 36) return false;
  let n = 0n;
  for (const c of s) {
    const v = B58_INDEX.get(c);
    if (v === undefined) return false;
    n = n * 58n + BigInt(v);
  }
  let hex = n.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  const zeros = /^1*/.exec(s)![0].length;
  const bytes = Buffer.concat([Buffer.alloc(zeros), n === 0n ? Buffer.alloc(0) : Buffer.from(hex, 'hex')]);
  if (bytes.length < 5) return false;
  const payload = bytes.subarray(0, -4);
  return sha256d(payload).subarray(0, 4).equals(bytes.subarray(-4));
}

/** The bech32 checksum function (BIP 173); the benchmark makes valid addresses with it too. */
export function polymod(values: number[]): number {
  const GEN = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
  let chk = 1;
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= GEN[i];
  }
  return chk >>> 0;
}

export function isBech32(s: string): boolean {
  // 90 is BIP173's bound; Litecoin's MWEB addresses are longer, so allow their length too.
  if (s.length < 14 || s.length > 130) return false;
  if (s !== s.toLowerCase() && s !== s.toUpperCase()) return false;
  const lower = s.toLowerCase();
  const sep = lower.lastIndexOf('1');
  if (sep < 1 || lower.length - sep - 1 < 6) return false;
  const hrp = lower.slice(0, sep);
  if (!/^[\x21-\x7e]+$/.test(hrp)) return false;
  const data: number[] = [];
  for (const c of lower.slice(sep + 1)) {
    const v = BECH32_INDEX.get(c);
    if (v === undefined) return false;
    data.push(v);
  }
  const expanded = [...[...hrp].map((c) => c.charCodeAt(0) >> 5), 0, ...[...hrp].map((c) => c.charCodeAt(0) & 31), ...data];
  const chk = polymod(expanded);
  return chk === 1 || chk === 0x2bc830a3;
}

/** Whether `s` has the form of an address (either encoding, checksum valid). */
export function looksLikeAddress(s: string): boolean {
  return isBase58Check(s) || isBech32(s);
}

/**
 * The one spelling the index keys an address by, or null when `s` is not an address. Bech32 is
 * case-insensitive but must not mix cases (BIP173): an all-upper-case address is the lower-case one.
 * Base58check is case-sensitive and stays as given.
 */
export function canonicalAddress(s: string): string | null {
  if (isBase58Check(s)) return s;
  if (isBech32(s)) return s.toLowerCase();
  return null;
}
