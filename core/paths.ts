/**
 * Where the host's files are, whether it runs from the TypeScript sources (tests and tools, through tsx) or
 * from the JavaScript that `npm run build` compiles into `dist/` (`npm start`, `npm run deployer`,
 * `npm run corectl`, the systemd unit). This module is `core/paths.ts` or `dist/core/paths.js`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SELF = fileURLToPath(import.meta.url);

/** True when this process runs the compiled tree: it then loads compiled plugins (index.js). */
export const BUILT = SELF.endsWith('.js');

/** The repository root (the manifests folder, the manifest format's schema), from either tree. */
export const REPO_ROOT = path.resolve(path.dirname(SELF), BUILT ? '../..' : '..');

/** The compiled tree: the same folders as the repository (core/, lib/, plugins/) with .js files. */
export const BUILD_DIR = path.join(REPO_ROOT, 'dist');

/**
 * The file plugin `id` loads from. From sources: `<pluginsDir>/<id>/index.ts` (or a plugin shipped as
 * index.js). Built: the compiled `index.js`, which for a plugins folder inside the repository is its
 * counterpart under dist/ (the default `plugins/` becomes `dist/plugins/`), else `<pluginsDir>/<id>/index.js`.
 * When no candidate exists the first one is returned, for the error message.
 */
export function pluginEntry(pluginsDir: string, id: string): string {
  const candidates: string[] = [];
  if (BUILT) {
    const rel = path.relative(REPO_ROOT, path.resolve(pluginsDir));
    if (rel && !rel.startsWith('..') && !path.isAbsolute(rel) && rel !== 'dist' && !rel.startsWith(`dist${path.sep}`))
      candidates.push(path.join(BUILD_DIR, rel, id, 'index.js'));
    candidates.push(path.join(pluginsDir, id, 'index.js'));
  } else candidates.push(path.join(pluginsDir, id, 'index.ts'), path.join(pluginsDir, id, 'index.js'));
  return candidates.find((f) => fs.existsSync(f)) ?? candidates[0];
}

let sourcesBuilt: Promise<boolean> | undefined;
/**
 * The module a worker thread or child process runs for the sibling module `url` (named with the caller's
 * extension: `.ts` from the sources, `.js` from the compiled tree). From the compiled tree: `url` itself.
 * From the sources (tests and tools under tsx): its compiled counterpart in dist/ when dist/ was built
 * from the current sources (scripts/build.mjs's stamp, checked once per process: a stat of each source),
 * so the child need not load tsx: a child process started 0.65 s of CPU with `--import tsx` against 0.14 s
 * compiled, a worker thread 0.55-0.6 s against 0.11-0.15 s (measured). Else `url`, which the caller runs
 * through tsx (`compiled: false`). `current` replaces the check of dist/ (tests of either outcome).
 */
export async function runnableModule(url: URL, current: () => Promise<boolean> = builtFromSources): Promise<{ url: URL; compiled: boolean }> {
  if (!url.pathname.endsWith('.ts')) return { url, compiled: true };
  const rel = path.relative(REPO_ROOT, fileURLToPath(url));
  if (rel.startsWith('..') || path.isAbsolute(rel)) return { url, compiled: false };
  const built = path.join(BUILD_DIR, rel.replace(/\.ts$/, '.js'));
  return (await current()) && fs.existsSync(built) ? { url: pathToFileURL(built), compiled: true } : { url, compiled: false };
}

/** Why dist/ was found not current (null: it was), once builtFromSources has looked. */
export let builtTreeStale: string | null = null;
function builtFromSources(): Promise<boolean> {
  return (sourcesBuilt ??= import(pathToFileURL(path.join(REPO_ROOT, 'scripts', 'build.mjs')).href).then(
    (m: { staleReason(): string | null }) => (builtTreeStale = m.staleReason()) === null,
    (e: Error) => ((builtTreeStale = `scripts/build.mjs did not load: ${e.message}`), false),
  ));
}
