/**
 * Every /core route's level is the one the spec's Node operations tables give (read from the spec itself),
 * and the level matrix holds on a running node: anonymous callers and plain users are refused the guarded
 * routes before any handler runs, the core team the Admin ones, and the allowed callers reach the handler.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { REPO_ROOT } from '../../core/config.ts';
import { CORE_TEAM, MEMBER, OPERATOR, authAs, startOpsNode } from './support.ts';

const SPEC = path.resolve(REPO_ROOT, '../shared/spec/node-api.md');
const manifest = YAML.parse(fs.readFileSync(path.join(REPO_ROOT, 'manifests/node.yaml'), 'utf8'));
const routes: { id: string; path: string; level?: string; method?: string; aliases?: string[] }[] = manifest.routes;
const full = (p: string) => p.replace(/\/:[A-Za-z]+\?/g, '');
/**
 * Routes another node calls with a signed body and no session (facts §4.6): public for the host, their
 * handler admits a listed node's signature or the spec's level (proved in nodeports.test.ts).
 */
const SIGNED_BY_NODE_OR_LEVEL = new Set(['/core/keepupnpportsopen']);

/** The spec's level per /core path, from the tables under "Node operations". */
function specLevels(): Map<string, string> {
  const text = fs.readFileSync(SPEC, 'utf8');
  const section = text.slice(text.indexOf('### Node operations'), text.indexOf('### Applications'));
  const out = new Map<string, string>();
  let level = '';
  for (const line of section.split('\n')) {
    if (/^Admin:/.test(line)) level = 'admin';
    else if (/^AdminAndCoreTeam:/.test(line)) level = 'adminandcoreteam';
    else if (/^Public/.test(line)) level = 'public';
    if (!level || !line.startsWith('| ') || line.startsWith('| Path') || line.startsWith('|---')) continue;
    for (const m of line.split('|')[1].matchAll(/\/core\/[a-z]+/g)) out.set(m[0], level);
  }
  // The Public table names /core/adjustapiport only in a purpose column ("also listed at this level"); it
  // is Admin as in the reference (routes-8.17.tsv): an anonymous call would move the node's API port.
  out.set('/core/adjustapiport', 'admin');
  return out;
}

describe('node route levels', function () {
  this.timeout(120_000);

  it("are the spec's levels for every /core route it lists", function () {
    if (!fs.existsSync(SPEC)) this.skip();
    const spec = specLevels();
    assert.ok(spec.size > 60, `the spec's tables were read (${spec.size} paths)`);
    const wrong = routes
      .filter((r) => spec.has(full(r.path)) && !(SIGNED_BY_NODE_OR_LEVEL.has(full(r.path)) && (r.level ?? 'public') === 'public'))
      .filter((r) => (r.level ?? 'public') !== spec.get(full(r.path)))
      .map((r) => `${full(r.path)}: manifest ${r.level ?? 'public'}, spec ${spec.get(full(r.path))}`);
    assert.deepEqual(wrong, []);
    const unlisted = routes.map((r) => full(r.path)).filter((p) => p.startsWith('/core/') && !spec.has(p));
    assert.deepEqual(unlisted, [], 'every served /core route is in the spec');
  });

  it('hold on a running node: refused before the handler, reached by the allowed callers', async () => {
    const reached: { route: string; who?: string }[] = [];
    const node = await startOpsNode({ onHandler: (route, caller) => reached.push({ route, who: caller.legacyid }) });
    try {
      // Path parameters a route's input requires get a valid value, so the allowed callers reach the handler.
      const SAMPLE: Record<string, string> = { port: '25999', apiport: '16137', routerip: '192.168.1.1', account: 'eth:0xabc', chainid: '0' };
      const withSamples = (p: string) => full(p.replace(/:([A-Za-z]+)\?/g, (m, k: string) => SAMPLE[k] ?? m));
      const send = (r: (typeof routes)[number], who?: string) => node.request(r.method === 'POST' ? 'POST' : 'GET', withSamples(r.path), { headers: who ? authAs(who) : {} });
      const guarded = routes.filter((r) => (r.level ?? 'public') !== 'public' && r.method !== 'SSE' && r.method !== 'WS');
      for (const r of guarded) {
        for (const who of [undefined, MEMBER, ...(r.level === 'admin' ? [CORE_TEAM] : [])]) {
          const a = await send(r, who);
          assert.deepEqual([a.status, a.json?.data?.code], [200, 401], `${r.id} as ${who ?? 'anonymous'}`);
        }
      }
      assert.equal(reached.length, 0, JSON.stringify(reached.slice(0, 5)));
      for (const r of guarded) {
        for (const who of r.level === 'admin' ? [OPERATOR] : [OPERATOR, CORE_TEAM]) {
          await send(r, who);
          assert.ok(reached.some((x) => x.route === r.id && x.who === who), `${r.id} reached as ${who}`);
        }
      }
    } finally {
      await node.close();
    }
  });
});
