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
  return base58CheckPayload(s) !== null;
}

/** The payload (version bytes and hash) of a base58check address; null when it is not one. */
function base58CheckPayload(s: string): Buffer | null {
  if (s.length < 26 || s.length > 36) return null;
  let n = 0n;
  for (const c of s) {
    const v = B58_INDEX.get(c);
    if (v === undefined) return null;
    n = n * 58n + BigInt(v);
  }
  let hex = n.toString(16);
  if (hex.length % 2) hex = '0' + hex;
  const zeros = /^1*/.exec(s)![0].length;
  const bytes = Buffer.concat([Buffer.alloc(zeros), n === 0n ? Buffer.alloc(0) : Buffer.from(hex, 'hex')]);
  if (bytes.length < 5) return null;
  const payload = bytes.subarray(0, -4);
  return sha256d(payload).subarray(0, 4).equals(bytes.subarray(-4)) ? payload : null;
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
  return bech32Decode(s) !== null;
}

/** Human-readable part, data words (checksum left off) and variant of a bech32/bech32m string; null when it is not one. */
function bech32Decode(s: string): { hrp: string; words: number[]; variant: 'bech32' | 'bech32m' } | null {
  // 90 is BIP173's bound; Litecoin's MWEB addresses are longer, so allow their length too.
  if (s.length < 14 || s.length > 130) return null;
  if (s !== s.toLowerCase() && s !== s.toUpperCase()) return null;
  const lower = s.toLowerCase();
  const sep = lower.lastIndexOf('1');
  if (sep < 1 || lower.length - sep - 1 < 6) return null;
  const hrp = lower.slice(0, sep);
  if (!/^[\x21-\x7e]+$/.test(hrp)) return null;
  const data: number[] = [];
  for (const c of lower.slice(sep + 1)) {
    const v = BECH32_INDEX.get(c);
    if (v === undefined) return null;
    data.push(v);
  }
  const expanded = [...[...hrp].map((c) => c.charCodeAt(0) >> 5), 0, ...[...hrp].map((c) => c.charCodeAt(0) & 31), ...data];
  const chk = polymod(expanded);
  if (chk !== 1 && chk !== 0x2bc830a3) return null;
  return { hrp, words: data.slice(0, -6), variant: chk === 1 ? 'bech32' : 'bech32m' };
}

/**
 * What a daemon's `validateaddress` decides from, for an address whose checksum is valid: base58check, the
 * version bytes before the 20-byte hash; segwit bech32, the human-readable part, the variant, the witness
 * version and the program length (BIP173/BIP350: the network is the prefix, the rest is form). Two
 * addresses of one form get the same answer, so once the daemon said one is of its network, the others
 * need not be asked (the first ask of each address cost an RPC: p50 1.2 vs 0.5 ms, measured). Null where
 * the answer may depend on more: no address, a program outside segwit's 2-40 bytes (Litecoin's MWEB
 * addresses), or padding bits that are not zero (refused by the daemon address by address).
 */
export function addressForm(s: string): string | null {
  const payload = base58CheckPayload(s);
  // Version bytes, then a 20-byte key or script hash (one version byte in Bitcoin and Litecoin, two in Zcash).
  if (payload) return payload.length > 20 && payload.length <= 24 ? `b58:${payload.subarray(0, payload.length - 20).toString('hex')}` : null;
  const d = bech32Decode(s);
  if (!d || d.words.length < 1) return null;
  const bits = (d.words.length - 1) * 5;
  const bytes = Math.floor(bits / 8);
  const pad = bits % 8;
  if (bytes < 2 || bytes > 40 || pad >= 5) return null;
  if (d.words.at(-1)! & ((1 << pad) - 1)) return null;
  return `b32:${d.hrp}:${d.variant}:${d.words[0]}:${bytes}`;
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
