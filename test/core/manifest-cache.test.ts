/**
 * The build's manifest cache (core/manifest/cache.ts): a cached manifest is the manifest parsing gives, its
 * route schemas compiled on first use validate as compiled ones do, and anything not cached (another text,
 * another manifest format) is parsed and checked in full, with the same errors.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ManifestCache } from '../../core/manifest/cache.ts';
import { loadManifestDir, parseManifest } from '../../core/manifest/parse.ts';
import { bindRoute, type BoundRoute } from '../../core/http/chain.ts';
import { tempDir } from '../support/node.ts';
import { REPO_MANIFESTS, manifestsDir, startFixtureNode } from '../support/fixture.ts';

const yamlFiles = (dir: string) => fs.readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort().map((f) => path.join(dir, f));
/** As JSON has it: keys whose value is undefined are absent in the cache's copy. */
const plain = (v: unknown) => JSON.parse(JSON.stringify(v));

describe('manifest cache', () => {
  const files = yamlFiles(REPO_MANIFESTS);
  const cache = ManifestCache.build(files);

  it('holds every shipped manifest, each as parsing it gives, under the name it is loaded by', () => {
    assert.equal(cache.size, files.length);
    for (const f of files) {
      const text = fs.readFileSync(f, 'utf8');
      const hit = cache.lookup(text, 'vendor/x.yaml')!;
      assert.ok(hit.schemasChecked);
      const { schemasChecked: _, ...rest } = hit;
      assert.deepEqual(plain(rest), plain(parseManifest(text, 'vendor/x.yaml')));
      assert.match(hit.routes[0].source, /^vendor\/x\.yaml:\d+:\d+$/);
    }
  });

  it('survives its file, and is not used for another manifest format', () => {
    const dir = tempDir('wst-cache-');
    try {
      const file = path.join(dir, 'cache.json');
      cache.write(file);
      assert.equal(ManifestCache.read(file).size, files.length);
      const data = JSON.parse(fs.readFileSync(file, 'utf8'));
      fs.writeFileSync(file, JSON.stringify({ ...data, schema: 'another format' }));
      assert.equal(ManifestCache.read(file).size, 0);
      assert.equal(ManifestCache.read(path.join(dir, 'missing.json')).size, 0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a text not in the cache is parsed in full: the same error at file:line:column', () => {
    const dir = manifestsDir(['host', 'node']);
    try {
      fs.appendFileSync(path.join(dir, 'node.yaml'), '  - { id: node.extra, path: /extra, handler: x, levle: user }\n');
      const message = (fn: () => unknown) => {
        try {
          fn();
        } catch (e) {
          return (e as Error).message;
        }
        assert.fail('loaded');
      };
      const uncached = message(() => loadManifestDir(dir));
      assert.match(uncached, /node\.yaml:\d+:\d+: routes\[\d+\]\.levle: is not a known key$/);
      assert.equal(message(() => loadManifestDir(dir, cache)), uncached);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('route validators compiled on first use refuse and accept what compiled ones do', () => {
    const samples: unknown[] = [{}, { n: '1' }, { limit: 'x' }, { address: 'a'.repeat(200) }, { txid: '00'.repeat(32), verbose: '1' }, { height: -1 }, []];
    let checked = 0;
    for (const m of loadManifestDir(REPO_MANIFESTS)) {
      for (const spec of m.routes) {
        const eager = bindRoute(spec, undefined);
        const lazy = bindRoute(spec, undefined, true);
        for (const key of ['validateParams', 'validateQuery', 'validateBody'] as const) {
          if (!eager[key]) continue;
          for (const s of samples) {
            const [a, b] = [structuredClone(s), structuredClone(s)];
            assert.equal(lazy[key]!(b), eager[key]!(a), `${spec.id} ${key}`);
            assert.deepEqual(lazy[key]!.errors, eager[key]!.errors);
            assert.deepEqual(b, a);
            checked++;
          }
        }
        if (eager.validateInput)
          for (const s of samples) {
            const run = (v: BoundRoute['validateInput']) => {
              try {
                return v!({ path: {}, query: structuredClone(s) as Record<string, unknown>, body: undefined });
              } catch (e) {
                return (e as Error).message;
              }
            };
            assert.deepEqual(run(lazy.validateInput), run(eager.validateInput), spec.id);
            checked++;
          }
      }
    }
    assert.ok(checked > 500, `${checked}`);
  });

  describe('a node loading from the cache', () => {
    let node: Awaited<ReturnType<typeof startFixtureNode>>;
    let plainNode: Awaited<ReturnType<typeof startFixtureNode>>;
    before(async () => {
      plainNode = await startFixtureNode();
      node = await startFixtureNode({ manifestCache: ManifestCache.build(yamlFiles(plainNode.manifests)) });
      assert.ok(node.host.manifests.every((m) => m.schemasChecked));
    });
    after(async () => {
      await node?.close();
      await plainNode?.close();
    });

    it('answers valid and invalid input as a node that parsed and compiled everything', async () => {
      const calls: [string, string, unknown?][] = [
        ['GET', '/fixture/typed/5?limit=3'],
        ['GET', '/fixture/typed/0'],
        ['GET', '/fixture/typed/x'],
        ['GET', '/fixture/typed/5?limit=11'],
        ['GET', '/fixture/typed/5?other=1'],
        ['POST', '/fixture/rawjson', '[1]'],
        ['POST', '/fixture/rawjson', '{"a":1}'],
        ['GET', '/fixture/typed/5?limit=3'],
      ];
      for (const [method, p, body] of calls) {
        const init = body === undefined ? {} : { body: body as string, headers: { 'content-type': 'text/plain' } };
        const [a, b] = [await plainNode.request(method, p, init), await node.request(method, p, init)];
        assert.equal(b.status, a.status, p);
        assert.deepEqual(b.json, a.json, p);
      }
    });

    it('a manifest changed on disk is parsed and compiled in full at reload', async () => {
      const file = path.join(node.manifests, 'fixture.yaml');
      const text = fs.readFileSync(file, 'utf8');
      fs.writeFileSync(file, text.replace('minimum: 1 }', 'minimum: 7 }'));
      const res = await node.host.reload();
      assert.ok(res.ok, JSON.stringify(res));
      const fixture = node.host.manifests.find((m) => m.plugin === 'fixture')!;
      assert.equal(fixture.schemasChecked, undefined);
      assert.equal((await node.get('/fixture/typed/5')).json.status, 'error');
      assert.equal((await node.get('/fixture/typed/7')).json.status, 'success');
      fs.writeFileSync(file, text.replace('minimum: 1 }', 'minimum: 1, maxLenght: 3 }'));
      const bad = await node.host.reload();
      assert.ok(!bad.ok && /fixture\.yaml:\d+:\d+: maxLenght is not a JSON Schema keyword/.test(bad.error), JSON.stringify(bad));
    });
  });
});
