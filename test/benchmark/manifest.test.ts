/** The benchmark manifest against the contract: the spec's routes, the reference's levels and aliases. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { loadManifestFile } from '../../core/manifest/parse.ts';

const manifest = loadManifestFile(path.join(REPO_ROOT, 'manifests/benchmark.yaml'));
const reference = fs
  .readFileSync(path.join(REPO_ROOT, 'test/daemon/fixtures/reference-routes.tsv'), 'utf8')
  .split('\n')
  .map((l) => l.split('\t'))
  .filter(([, p]) => p?.startsWith('/benchmark/'));

describe('benchmark manifest', () => {
  it('serves the spec list (GET and POST signing) with the legacy alias', () => {
    const served = manifest.routes.flatMap((r) => [r.path, ...r.aliases].map((p) => `${r.method} ${p.replace(/\/:[a-z]+\?/, '')}`));
    for (const name of ['getstatus', 'help', 'getbenchmarks', 'getinfo', 'restartnodebenchmarks', 'stop', 'signcorenodetransaction', 'signlegacynodetransaction'])
      assert.ok(served.includes(`GET /benchmark/${name}`), name);
    assert.ok(served.includes('POST /benchmark/signcorenodetransaction'));
    assert.ok(served.includes('POST /benchmark/signlegacynodetransaction'));
  });

  it('gives every route and alias the reference level', () => {
    for (const r of manifest.routes)
      for (const p of [r.path, ...r.aliases]) {
        const ref = reference.find(([m, rp]) => m === r.method && rp === p);
        assert.ok(ref, `${r.method} ${p}`);
        assert.equal(r.level, ref[2], `${r.method} ${p}`);
      }
  });
});
