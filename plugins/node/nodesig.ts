/**
 * Bodies signed by another node of the network (keepupnpportsopen, checkappavailability; facts §4.6): the
 * signature is a Bitcoin-style message signature, by the node key `pubKey`, of the JSON of the body without
 * its `signature` field, in the order the body gave its keys. The signer must be in the daemon's
 * deterministic node list under that key, at the body's `ip`: a node may ask about its own address only,
 * so the routes cannot be used to make this node connect to anybody else.
 */
import { createRequire } from 'node:module';
import bitcoinMessage from 'bitcoinjs-message';
import { ApiError } from '../../core/plugin-api.ts';
import type { DaemonService } from '../daemon/api.ts';

interface Secp256k1 {
  recover(hash: Buffer, signature: Buffer, recovery: number, compressed?: boolean): Buffer;
  publicKeyConvert(key: Buffer, compressed?: boolean): Buffer;
}
const secp256k1 = createRequire(import.meta.url)('secp256k1') as Secp256k1;

const BASE64_65 = /^[A-Za-z0-9+/]{87}=?$/;

/** Whether `signature` (base64, 65 bytes) over `message` was made with the key `pubKey` (hex, either form). */
export function signedBy(message: string, pubKey: string, signature: string): boolean {
  if (!BASE64_65.test(signature) || !/^(02|03)[0-9a-fA-F]{64}$|^04[0-9a-fA-F]{128}$/.test(pubKey)) return false;
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

/** The host part of a node list `ip` (`1.2.3.4` or `1.2.3.4:16137`). */
function hostOf(ip: string): string {
  return ip.includes(':') ? ip.slice(0, ip.lastIndexOf(':')) : ip;
}

/**
 * Checks a node-signed body; throws the envelope's error when it does not hold. `body` is the parsed body in
 * the order it was sent.
 */
export async function checkNodeSignature(body: Record<string, unknown>, daemon: DaemonService | undefined): Promise<void> {
  const { signature, ...signed } = body;
  const pubKey = typeof body.pubKey === 'string' ? body.pubKey : '';
  if (typeof signature !== 'string' || !pubKey) throw new ApiError(401, 'Unauthorized', 'A signature of a node of the network (pubKey, signature) or an admin or core team session is required');
  if (!daemon) throw new ApiError(503, 'DaemonPluginDisabled', 'The daemon plugin is not running on this node; node signatures cannot be checked');
  let list: { ip?: string; pubkey?: string }[];
  try {
    list = await daemon.call<{ ip?: string; pubkey?: string }[]>('viewdeterministiclegacynodelist', [], { cache: true });
  } catch (e) {
    throw new ApiError(503, 'DaemonUnavailable', `The node list cannot be read from the daemon: ${((e as Error).message ?? '').slice(0, 120)}`);
  }
  const ip = String(body.ip ?? '');
  const listed = Array.isArray(list) && list.some((n) => typeof n?.pubkey === 'string' && n.pubkey.toLowerCase() === pubKey.toLowerCase() && hostOf(String(n.ip ?? '')) === ip);
  if (!listed) throw new ApiError(401, 'Unauthorized', `No node of the network is listed at ${ip.slice(0, 64)} with this pubKey`);
  if (!signedBy(JSON.stringify(signed), pubKey, signature)) throw new ApiError(401, 'Unauthorized', 'The signature is not valid for this pubKey');
}
