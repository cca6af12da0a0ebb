/**
 * A node serving only the identity, core and host manifests (copied to a temp folder), so these tests do not
 * depend on other plugins; and the login steps a wallet takes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { startNode, tempDir, type StartOptions, type TestNode } from '../support/node.ts';
import type { TestWallet } from './keys.ts';

export function identityManifests(): string {
  const dir = tempDir('corenode-idm-');
  for (const f of ['node.yaml', 'host.yaml', 'identity.yaml']) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', f), path.join(dir, f));
  return dir;
}

export function startIdentityNode(opts: StartOptions = {}): Promise<TestNode> {
  return startNode({ manifestsDir: identityManifests(), ...opts });
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
export async function login(node: TestNode, wallet: TestWallet, contentType = 'text/plain'): Promise<LoggedIn> {
  const phrase = await node.get('/id/loginphrase');
  if (phrase.json?.status !== 'success') throw new Error(`no phrase: ${phrase.text}`);
  const loginPhrase: string = phrase.json.data;
  const signature = await wallet.sign(loginPhrase);
  const res = await node.post('/id/verifylogin', { legacyid: wallet.legacyid, loginPhrase, signature }, { 'content-type': contentType });
  if (res.json?.status !== 'success') throw new Error(`login refused: ${res.text}`);
  return { legacyid: wallet.legacyid, loginPhrase, signature, header: authHeader(wallet.legacyid, signature, loginPhrase), answer: res.json };
}
