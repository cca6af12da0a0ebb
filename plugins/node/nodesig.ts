/**
 * Bodies signed by another node of the network (keepupnpportsopen, checkappavailability; facts §4.6): the
 * signature is a Bitcoin-style message signature, by the node key `pubKey`, of the JSON of the body without
 * its `signature` field, in the order the body gave its keys. The signer must be in the daemon's
 * deterministic node list under that key, at the body's `ip`: a node may ask about its own address only,
 * so the routes cannot be used to make this node connect to anybody else.
 */
import { ApiError } from '../../core/plugin-api.ts';
import type { DaemonService } from '../daemon/api.ts';
import { listedAt, signedBy } from '../../lib/nodelist/signature.ts';

export { signedBy };

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
  const listed = listedAt(list, pubKey, ip);
  if (!listed) throw new ApiError(401, 'Unauthorized', `No node of the network is listed at ${ip.slice(0, 64)} with this pubKey`);
  if (!signedBy(JSON.stringify(signed), pubKey, signature)) throw new ApiError(401, 'Unauthorized', 'The signature is not valid for this pubKey');
}
