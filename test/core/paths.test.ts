/**
 * Which module a worker thread or child process runs (core/paths.ts runnableModule): the compiled one
 * wherever it can be, so children of a process on the TypeScript sources need not load tsx; the sources
 * when dist/ is not current or the module has no compiled counterpart.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { BUILD_DIR, REPO_ROOT, builtTreeStale, runnableModule } from '../../core/paths.ts';
import os from 'node:os';

const WORKER = pathToFileURL(path.join(REPO_ROOT, 'plugins', 'volumes', 'extract-worker.ts'));
const current = async () => true;
const stale = async () => false;

describe('core paths: the module a child runs', () => {
  it('from the sources with dist/ current: the compiled counterpart', async () => {
    const r = await runnableModule(WORKER, current);
    assert.deepEqual([fileURLToPath(r.url), r.compiled], [path.join(BUILD_DIR, 'plugins', 'volumes', 'extract-worker.js'), true]);
  });

  it('from the sources with dist/ stale: the TypeScript module, for tsx', async () => {
    const r = await runnableModule(WORKER, stale);
    assert.deepEqual([r.url.href, r.compiled], [WORKER.href, false]);
  });

  it('a compiled module is run as it is; a TypeScript module outside the repository or never built, through tsx', async () => {
    const js = pathToFileURL(path.join(BUILD_DIR, 'plugins', 'volumes', 'extract-worker.js'));
    assert.deepEqual(await runnableModule(js, stale), { url: js, compiled: true });
    const outside = pathToFileURL(path.join(os.tmpdir(), 'corenode-elsewhere', 'worker.ts'));
    assert.deepEqual(await runnableModule(outside, current), { url: outside, compiled: false });
    const unbuilt = pathToFileURL(path.join(REPO_ROOT, 'plugins', 'volumes', 'no-such-worker.ts'));
    assert.deepEqual(await runnableModule(unbuilt, current), { url: unbuilt, compiled: false });
  });

  it('by default dist/ is checked against the sources: current in a test run (mocha builds it first)', async () => {
    assert.equal((await runnableModule(WORKER)).compiled, true, `dist/ was found stale: ${builtTreeStale}`);
  });
});
