/**
 * Keys of a testbed: node keys (the secp256k1 key the node list shows, `peers.nodePrivateKey`) and wallets
 * (operators, the core team, a funded user) with their WIF, the form `npm run login -- --wif` takes.
 */
import crypto from 'node:crypto';
import { nodeSigner, type NodeSigner } from '../../../lib/nodelist/signature.ts';
import { base58Encode, hash160, sha256 } from '../../../plugins/identity/ids.ts';
import { bitcoinWallet } from '../wallets.ts';

export interface NodeKey extends NodeSigner {
  /** 64 hex characters. */
  secret: string;
}

export function newNodeKey(): NodeKey {
  const secret = crypto.randomBytes(32).toString('hex');
  return { secret, ...nodeSigner(secret) };
}

const check = (payload: Buffer) => base58Encode(Buffer.concat([payload, sha256(sha256(payload)).subarray(0, 4)]));

/** A compressed-key WIF: mainnet (0x80, `K`/`L`) or testnet and regtest (0xef, `c`). */
export function wif(privateKey: Buffer, network: 'main' | 'test' = 'main'): string {
  return check(Buffer.concat([Buffer.from([network === 'main' ? 0x80 : 0xef]), privateKey, Buffer.from([1])]));
}

export interface Wallet {
  /** Its id (a mainnet P2PKH address), what logs in. */
  legacyid: string;
  privateKey: Buffer;
  wif: string;
  /** The same key's address on regtest (version 0x6f), where coins are paid to. */
  regtestAddress: string;
  /** The compressed public key, hex. */
  publicKey: string;
  sign(message: string): string;
}

export function newWallet(): Wallet {
  const w = bitcoinWallet();
  const ecdh = crypto.createECDH('secp256k1');
  ecdh.setPrivateKey(w.privateKey);
  const publicKey = Buffer.from(ecdh.getPublicKey(null, 'compressed'));
  return {
    ...w,
    wif: wif(w.privateKey),
    regtestAddress: check(Buffer.concat([Buffer.from([0x6f]), hash160(publicKey)])),
    publicKey: publicKey.toString('hex'),
  };
}
