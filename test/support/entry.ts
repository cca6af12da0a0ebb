/**
 * The shipped entry points as their own processes: `node dist/core/cli/<name>.js`, what `npm start`,
 * `npm run deployer`, `npm run corectl` and the systemd unit run. Tests spawn these rather than the
 * TypeScript sources through tsx: that is the product as it ships, and a child started on dist/ costs
 * less CPU than one with tsx's loader (2.3-2.4 s against 2.7-2.9 s to the first answer, measured at load 7),
 * which adds up over the suite's ~100 child nodes. dist/ is rebuilt when stale by the global setup below
 * (a root hook plugin, see .mocharc.cjs) and by `npm test` before the shards start.
 */
import path from 'node:path';
import { REPO_ROOT } from '../../core/paths.ts';
// @ts-expect-error: plain JavaScript without types (it runs before anything is built)
import { buildIfStale } from '../../scripts/build.mjs';

export type Entry = 'node' | 'deployer' | 'corectl';

/** The argv after `process.execPath` that runs entry point `name` from dist/. */
export function entryArgs(name: Entry): string[] {
  return [path.join(REPO_ROOT, 'dist', 'core', 'cli', `${name}.js`)];
}

/** Before any test: dist/ built from the current sources (a stat of each source file when it is). */
export function mochaGlobalSetup(): void {
  buildIfStale();
}
