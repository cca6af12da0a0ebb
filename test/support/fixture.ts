/** The fixture plugin (host features, a test-double session resolver, a daemon consumer) and nodes serving it. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPO_ROOT } from '../../core/config.ts';
import { startNode, tempDir, type StartOptions, type TestNode } from './node.ts';
// @ts-expect-error: plain JavaScript without types (it runs before anything is built)
import { transpileIntoDist } from '../../scripts/build.mjs';

export const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixture');
export const FIXTURE_PLUGINS = path.join(FIXTURES, 'plugins');
export const FIXTURE_MANIFESTS = path.join(FIXTURES, 'manifests');
export const REPO_MANIFESTS = path.join(REPO_ROOT, 'manifests');

export const OPERATOR = '1OperatorOfThisNodexxxxxxxxxxxxxx';
export const CORE_TEAM = '1hjy4bCYBJr4mny4zCE85J94RXa8W6q37';
export const USER = '1SomeUserxxxxxxxxxxxxxxxxxxxxxxxx';
export const APP_OWNER = '1FixtureAppOwnerxxxxxxxxxxxxxxxxx';

/** The fixture plugin's test-double session header for `id`. */
export function sessionFor(id: string): Record<string, string> {
  const q = new URLSearchParams({ legacyid: id, signature: 'test-signature', loginPhrase: `phrase-of-${id}-xxxxxxxxxxxxxxxxxxxxxxxx` });
  return { legacyidauth: q.toString() };
}

/**
 * The fixture plugin built into dist/ (test/support/fixture/plugins/... there), where a CLI run from dist/
 * finds it under FIXTURE_PLUGINS; its imports reach the built host. Once per process.
 */
let fixtureBuilt = false;
export function buildFixturePluginIntoDist(): void {
  if (fixtureBuilt) return;
  transpileIntoDist([path.relative(REPO_ROOT, path.join(FIXTURE_PLUGINS, 'fixture', 'index.ts'))]);
  fixtureBuilt = true;
}

/** A temp folder holding copies of the named manifests (repo files by plugin id, or fixture file paths). */
export function manifestsDir(files: string[]): string {
  const dir = tempDir('corenode-manifests-');
  for (const f of files) {
    const src = f.includes('/') ? f : path.join(REPO_MANIFESTS, `${f}.yaml`);
    fs.copyFileSync(src, path.join(dir, path.basename(src)));
  }
  return dir;
}

/** A node serving the host routes and the fixture plugin (no repo plugins). */
export async function startFixtureNode(opts: StartOptions & { extra?: string[] } = {}): Promise<TestNode & { manifests: string }> {
  const manifests = opts.manifestsDir ?? manifestsDir(['host', path.join(FIXTURE_MANIFESTS, 'fixture.yaml'), ...(opts.extra ?? [])]);
  const node = await startNode({
    ...opts,
    manifestsDir: manifests,
    config: { pluginsDir: FIXTURE_PLUGINS, initial: { legacyid: OPERATOR }, ...opts.config },
  });
  const close = node.close;
  return {
    ...node,
    manifests,
    async close(o) {
      await close(o);
      if (!opts.manifestsDir) fs.rmSync(manifests, { recursive: true, force: true });
    },
  };
}

/** A node serving the repo's core and host manifests only (other plugins' changes cannot break it). */
export async function startCoreNode(opts: StartOptions = {}): Promise<TestNode> {
  const dir = opts.manifestsDir ?? manifestsDir(['node', 'host']);
  const node = await startNode({ ...opts, manifestsDir: dir });
  const close = node.close;
  return {
    ...node,
    async close(o) {
      await close(o);
      if (!opts.manifestsDir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export { eventually } from './wait.ts';

/** A manifests folder and a plugins folder holding only these plugins and the test fixture plugin. */
export function isolatedPlugins(...names: string[]): { manifestsDir: string; pluginsDir: string; cleanup(): void } {
  const manifestsDir = tempDir('corenode-manifests-');
  const pluginsDir = tempDir('corenode-plugins-');
  for (const n of ['host', 'node', ...names]) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${n}.yaml`), path.join(manifestsDir, `${n}.yaml`));
  for (const n of ['node', ...names]) fs.symlinkSync(path.join(REPO_ROOT, 'plugins', n), path.join(pluginsDir, n));
  fs.copyFileSync(path.join(FIXTURE_MANIFESTS, 'fixture.yaml'), path.join(manifestsDir, 'fixture.yaml'));
  fs.symlinkSync(path.join(FIXTURE_PLUGINS, 'fixture'), path.join(pluginsDir, 'fixture'));
  return {
    manifestsDir,
    pluginsDir,
    cleanup() {
      fs.rmSync(manifestsDir, { recursive: true, force: true });
      fs.rmSync(pluginsDir, { recursive: true, force: true });
    },
  };
}
