/**
 * The node's PGP key pair, made at first start and kept under `<dataDir>/node/` (the private key readable
 * by the node's user only). `/core/pgp` answers the armored public key.
 */
import fs from 'node:fs';
import path from 'node:path';
import { generateKey, readKey } from 'openpgp';

export async function ensurePgpKey(dir: string, userId: string): Promise<string> {
  const pub = path.join(dir, 'pgp-public.asc');
  const priv = path.join(dir, 'pgp-private.asc');
  if (fs.existsSync(pub) && fs.existsSync(priv)) {
    const armored = fs.readFileSync(pub, 'utf8');
    await readKey({ armoredKey: armored }); // a damaged file fails the start, not a later request
    return armored;
  }
  // Curve25519: generated in milliseconds, where RSA-4096 takes seconds on a small node.
  const { publicKey, privateKey } = await generateKey({ type: 'curve25519', userIDs: [{ name: 'corenode', comment: userId || 'node' }], format: 'armored' });
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(priv, privateKey, { mode: 0o600 });
  fs.writeFileSync(pub, publicKey);
  return publicKey;
}
