/**
 * Login signature checks, done once per login (sessions are trusted afterwards).
 *
 * Bitcoin-style ids: bitcoinjs-message over the standard `\x18Bitcoin Signed Message:\n` prefix. Ethereum
 * ids: personal-sign (EIP-191) recovery, the address compared case-insensitively. Both recover the key
 * with the `secp256k1` package, which is the native libsecp256k1 binding when its install script built it
 * (about 0.07 ms per verify here) and the pure-JS elliptic fallback otherwise (about 1.3 ms); the choice is
 * reported by `verifierBackend`. Any malformed input or library exception is "not authentic", never thrown.
 */
import { createRequire } from 'node:module';
import bitcoinMessage from 'bitcoinjs-message';
import { ethers, idKind } from './ids.ts';

interface Secp256k1 {
  recover(hash: Buffer, signature: Buffer, recovery: number, compressed?: boolean): Buffer;
}

const require = createRequire(import.meta.url);
const secp256k1 = require('secp256k1') as Secp256k1;

/** 'native' when the libsecp256k1 binding loaded, else 'pure-js'. */
export const verifierBackend: 'native' | 'pure-js' = (() => {
  try {
    return require('secp256k1/bindings') === secp256k1 ? 'native' : 'pure-js';
  } catch {
    return 'pure-js';
  }
})();

const BASE64_65 = /^[A-Za-z0-9+/]{87}=?$/;
const HEX_65 = /^0x[0-9a-fA-F]{130}$/;

/**
 * Header byte 27-30: uncompressed key, 31-34: compressed, 35-38 / 39-42: compressed key flagged as
 * p2sh-p2wpkh / p2wpkh (Electrum, Trezor). For a P2PKH id the proof is the same in every case: the key
 * recovered from the signature hashes to the address. bitcoinjs-message would test the segwit flags against
 * a segwit address instead, so they are mapped to the plain compressed header first. `checkSegwitAlways` is
 * not used: it would also accept a key whose p2sh-p2wpkh script hash equals the id, which is not a P2PKH proof.
 */
export function verifyBitcoin(message: string, address: string, signature: string): boolean {
  if (!BASE64_65.test(signature)) return false;
  const sig = Buffer.from(signature, 'base64');
  if (sig.length !== 65 || sig[0] < 27 || sig[0] > 42) return false;
  if (sig[0] >= 35) sig[0] = 31 + ((sig[0] - 27) & 3);
  try {
    return bitcoinMessage.verify(message, address, sig);
  } catch {
    return false;
  }
}

/** Same result as `ethers.verifyMessage(message, signature) == address` (ignoring case), with native recovery. */
export function verifyEthereum(message: string, address: string, signature: string): boolean {
  if (!HEX_65.test(signature)) return false;
  try {
    const { Signature, computeAddress, hashMessage } = ethers();
    const sig = Signature.from(signature);
    const digest = Buffer.from(hashMessage(message).slice(2), 'hex');
    const rs = Buffer.from(sig.r.slice(2) + sig.s.slice(2), 'hex');
    const publicKey = secp256k1.recover(digest, rs, sig.yParity, false);
    return computeAddress('0x' + Buffer.from(publicKey).toString('hex')).toLowerCase() === address.toLowerCase();
  } catch {
    return false;
  }
}

/** Whether `signature` is `legacyid`'s signature of `message`; false for any id that is not valid. */
export function verifySignature(message: string, legacyid: string, signature: string): boolean {
  switch (idKind(legacyid)) {
    case 'p2pkh':
      return verifyBitcoin(message, legacyid, signature);
    case 'ethereum':
      return verifyEthereum(message, legacyid, signature);
    default:
      return false;
  }
}
