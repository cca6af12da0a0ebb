/** Fresh wallet keys for tests: bitcoin-style (compressed or uncompressed P2PKH) and ethereum. */
import type { TestNode } from './node.ts';
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

/** The header value a wallet sends after login: a URL-encoded query string. */
export const authHeader = (legacyid: string, signature: string, loginPhrase: string) => new URLSearchParams({ legacyid, signature, loginPhrase }).toString();

export interface LoggedIn {
  legacyid: string;
  loginPhrase: string;
  signature: string;
  header: string;
  answer: any;
}

/** Ask a phrase, sign it, log in; throws unless the node answered success. */
export async function login(node: Pick<TestNode, 'get' | 'post'>, wallet: TestWallet, contentType = 'text/plain'): Promise<LoggedIn> {
  const phrase = await node.get('/id/loginphrase');
  if (phrase.json?.status !== 'success') throw new Error(`no phrase: ${phrase.text}`);
  const loginPhrase: string = phrase.json.data;
  const signature = await wallet.sign(loginPhrase);
  const res = await node.post('/id/verifylogin', { legacyid: wallet.legacyid, loginPhrase, signature }, { 'content-type': contentType });
  if (res.json?.status !== 'success') throw new Error(`login refused: ${res.text}`);
  return { legacyid: wallet.legacyid, loginPhrase, signature, header: authHeader(wallet.legacyid, signature, loginPhrase), answer: res.json };
}
