/**
 * Shared set-up of the daemon tests: a node serving only the host, core, daemon and benchmark manifests (so
 * work in progress elsewhere cannot break these tests), pointed at a real litecoind in regtest.
 */
import fs from 'node:fs';
import path from 'node:path';
import assert from 'node:assert/strict';
import { REPO_ROOT } from '../../core/config.ts';
import { startNode, tempDir, type StartOptions, type TestNode } from '../support/node.ts';
import type { Regtest } from '../support/litecoind.ts';

export const OPERATOR = '1CoreNodeOperatorTestIdxxxxxxxxxx';
export const MEMBER = '1CoreNodeUserTestIdxxxxxxxxxxxxxx';

const FIXTURES = path.join(REPO_ROOT, 'test/daemon/fixtures');

/** A manifests folder and a plugins folder holding only these plugins and the test fixture plugin. */
export function isolatedPlugins(...names: string[]): { manifestsDir: string; pluginsDir: string; cleanup(): void } {
  const manifestsDir = tempDir('corenode-manifests-');
  const pluginsDir = tempDir('corenode-plugins-');
  for (const n of ['host', 'node', ...names]) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${n}.yaml`), path.join(manifestsDir, `${n}.yaml`));
  for (const n of ['node', ...names]) fs.symlinkSync(path.join(REPO_ROOT, 'plugins', n), path.join(pluginsDir, n));
  fs.copyFileSync(path.join(FIXTURES, 'fixture.yaml'), path.join(manifestsDir, 'fixture.yaml'));
  fs.symlinkSync(path.join(FIXTURES, 'fixture'), path.join(pluginsDir, 'fixture'));
  return {
    manifestsDir,
    pluginsDir,
    cleanup() {
      fs.rmSync(manifestsDir, { recursive: true, force: true });
      fs.rmSync(pluginsDir, { recursive: true, force: true });
    },
  };
}

/** The `legacyidauth` header of a fixture session of `legacyid`. */
export function authAs(legacyid: string): Record<string, string> {
  const q = new URLSearchParams({ legacyid, signature: 'fixture-signature', loginPhrase: `fixture-${legacyid}-phrase-of-forty-characters-at-least` });
  return { legacyidauth: q.toString() };
}

export async function startDaemonNode(ltc: Pick<Regtest, 'url' | 'user' | 'password'> | null, daemon: Record<string, unknown> = {}, opts: StartOptions = {}): Promise<TestNode> {
  const dirs = isolatedPlugins('daemon');
  const rpc = ltc ? { url: ltc.url, user: ltc.user, password: ltc.password } : undefined;
  const node = await startNode({
    ...opts,
    manifestsDir: dirs.manifestsDir,
    config: { pluginsDir: dirs.pluginsDir, initial: { legacyid: OPERATOR }, daemon: { ...(rpc ? { rpc } : {}), ...daemon }, ...opts.config },
  });
  const close = node.close;
  node.close = async (o) => {
    await close(o);
    dirs.cleanup();
  };
  return node;
}

/** The envelope's data of a successful answer (fails the test with the envelope otherwise). */
export function ok(answer: { status: number; json: any; text: string }): any {
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json?.status, 'success', answer.text);
  return answer.json.data;
}

/** The envelope's error data. */
export function err(answer: { status: number; json: any; text: string }): { code: number | string; name: string; message: string } {
  assert.equal(answer.json?.status, 'error', answer.text);
  return answer.json.data;
}
