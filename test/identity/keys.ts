/** Fresh wallet keys for tests: bitcoin-style (compressed or uncompressed P2PKH) and ethereum. */
import crypto from 'node:crypto';
import bitcoinMessage from 'bitcoinjs-message';
import { SigningKey, Wallet } from 'ethers';
import { p2pkhAddress } from '../../plugins/identity/ids.ts';

export interface TestWallet {
  legacyid: string;
  sign(message: string): string | Promise<string>;
}

/** A P2PKH wallet; `header` shifts the signature's first byte (segwit flags as Electrum and Trezor write them). */
export function bitcoinWallet(compressed = true, segwit?: 'p2wpkh' | 'p2sh(p2wpkh)'): { legacyid: string; privateKey: Buffer; sign(message: string): string } {
  const privateKey = crypto.randomBytes(32);
  const key = new SigningKey('0x' + privateKey.toString('hex'));
  const pub = Buffer.from((compressed ? key.compressedPublicKey : key.publicKey).slice(2), 'hex');
  return {
    privateKey,
    legacyid: p2pkhAddress(pub),
    sign: (message) => bitcoinMessage.sign(message, privateKey, compressed, segwit ? { segwitType: segwit } : undefined).toString('base64'),
  };
}

export function ethereumWallet(): TestWallet {
  const w = Wallet.createRandom();
  return { legacyid: w.address, sign: (message) => w.signMessage(message) };
}
