/**
 * The daemon manifest against the contract: every route's `x` block is well formed, every level is the
 * reference's, every reference daemon route is either served or a wallet/shielded call left out on purpose.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { loadManifestFile } from '../../core/manifest/parse.ts';
import { rpcRoute } from '../../plugins/daemon/params.ts';
import { DAEMON_METHODS } from '../../plugins/daemon/methods.ts';

const manifest = loadManifestFile(path.join(REPO_ROOT, 'manifests/daemon.yaml'));
// Copies of the contract's daemon and benchmark rows (routes-8.17.tsv) and sections (node-api.md).
const FIXTURES = path.join(REPO_ROOT, 'test/daemon/fixtures');
const reference = fs
  .readFileSync(path.join(FIXTURES, 'reference-routes.tsv'), 'utf8')
  .split('\n')
  .slice(1)
  .map((l) => l.split('\t'))
  .filter(([, p]) => p?.startsWith('/daemon/'))
  .map(([method, p, level]) => ({ method, path: p, level: level.replace(/\(.*\)$/, '') }));

/** Wallet calls (spec: a node has no wallet) and the wallet-backed node-start calls; every z* call is shielded-pool. */
const LEFT_OUT = new Set([
  'fundrawtransaction', 'gettransaction', 'zvalidateaddress', 'signrawtransaction', 'addmultisigaddress', 'backupwallet',
  'dumpprivkey', 'getbalance', 'getnewaddress', 'getrawchangeaddress', 'getreceivedbyaddress', 'getunconfirmedbalance',
  'getwalletinfo', 'importaddress', 'importprivkey', 'importwallet', 'keypoolrefill', 'listaddressgroupings',
  'listlockunspent', 'listreceivedbyaddress', 'listsinceblock', 'listtransactions', 'listunspent', 'lockunspent',
  'rescanblockchain', 'sendfrom', 'sendmany', 'sendtoaddress', 'settxfee', 'signmessage',
  'getcorenodeoutputs', 'getlegacynodeoutputs', 'startcorenode', 'startlegacynode', 'startdeterministiccorenode', 'startdeterministiclegacynode',
]);
const nameOf = (p: string) => p.split('/')[2];

const live = manifest.routes.filter((r) => !r.removed);

describe('daemon manifest', () => {
  it('has a well-formed x block on every route (types, limits, patterns)', () => {
    for (const r of live) {
      const rpc = rpcRoute(r.meta, r.id);
      assert.match(rpc.rpc, /^[a-z0-9_]+$/, r.id);
      for (const p of rpc.params) if (!p.fields) assert.ok(p.maxLength > 0 && p.maxLength <= 9_000_000, `${r.id} ${p.name}`);
      if (r.method === 'POST') {
        assert.equal(r.body.parser, 'raw-json', r.id);
        assert.ok(r.body.limit <= 9 * 1024 * 1024, r.id);
      }
    }
  });

  it('routes every path parameter to an RPC parameter of the same name', () => {
    for (const r of live) {
      const names = new Set<string>();
      const walk = (ps: ReturnType<typeof rpcRoute>['params']) => ps.forEach((p) => (p.fields ? walk(p.fields) : [p.name, ...(p.from ?? [])].forEach((n) => names.add(n))));
      walk(rpcRoute(r.meta, r.id).params);
      for (const seg of r.path.matchAll(/:([A-Za-z]+)\?/g)) assert.ok(names.has(seg[1]), `${r.id}: path parameter ${seg[1]} is not declared`);
    }
  });

  it('gives every route and alias the reference level, and the reference path', () => {
    const served = manifest.routes.flatMap((r) => [r.path, ...r.aliases].map((p) => ({ r, p })));
    for (const { r, p } of served) {
      // The spec's rule (Conventions) adds a *legacynode* alias the reference lacks: it takes its route's level.
      if (p !== r.path && p === r.path.replaceAll('corenode', 'legacynode') && !reference.some((x) => x.path === p)) continue;
      const ref = reference.find((x) => x.method === r.method && x.path === p);
      assert.ok(ref, `${r.method} ${p} is not a reference route`);
      assert.equal(r.level, ref.level, `${r.method} ${p}`);
    }
  });

  it('serves every reference daemon route; wallet and shielded-pool calls only as removed (410) routes', () => {
    for (const ref of reference) {
      const route = manifest.routes.find((r) => r.method === ref.method && [r.path, ...r.aliases].includes(ref.path));
      assert.ok(route, `${ref.method} ${ref.path}`);
      const name = nameOf(ref.path);
      assert.equal(route.removed, LEFT_OUT.has(name) || name.startsWith('z') ? '8.19.0' : false, `${ref.method} ${ref.path}`);
      if (route.removed) assert.equal(route.handler, undefined, route.id);
    }
    for (const r of live) assert.ok(!/^z|wallet|privkey/.test(rpcRoute(r.meta, r.id).rpc), r.id);
  });

  it('serves every daemon path the spec lists', () => {
    const spec = fs.readFileSync(path.join(FIXTURES, 'spec-daemon-benchmark.md'), 'utf8');
    const section = spec.slice(spec.indexOf('### Daemon'), spec.indexOf('### Benchmark'));
    const listed = [...section.matchAll(/\/daemon\/([a-z]+)/g)].map((m) => m[1]);
    assert.ok(listed.length >= 40);
    for (const name of listed) assert.ok(live.some((r) => r.method === 'GET' && nameOf(r.path) === name), name);
    for (const name of ['createrawtransaction', 'decoderawtransaction', 'decodescript'])
      assert.ok(live.some((r) => r.method === 'POST' && nameOf(r.path) === name), `POST ${name}`);
  });

  it('maps the corenode names to the daemon names in one table', () => {
    assert.equal(DAEMON_METHODS.getcorenodestatus, 'getlegacynodestatus');
    assert.equal(DAEMON_METHODS.corenodecurrentwinner, 'legacynodecurrentwinner');
  });
});
