/**
 * The daemon manifest against the contract: every route's `x` block is well formed, every level is the
 * reference's, every reference daemon route is either served or a wallet/shielded call left out on purpose.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startNode } from '../support/node.ts';
import { REPO_ROOT } from '../../core/config.ts';
import { loadManifestFile } from '../../core/manifest/parse.ts';
import { inputKeys, rpcName, type RpcRoute } from '../../plugins/daemon/rpc-route.ts';
import { DAEMON_METHODS } from '../../lib/daemon-rpc/methods.ts';
import daemonPlugin from '../../plugins/daemon/index.ts';
import { checkRouteData } from '../../core/manifest/route-data.ts';
import { entryArgs } from '../support/entry.ts';

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
  it('has a well-formed x block on every route, and a bounded input schema (types, limits, patterns)', () => {
    assert.deepEqual(checkRouteData(manifest, daemonPlugin), []);
    for (const r of live) {
      assert.match(rpcName(r.meta as RpcRoute, r.id), /^[a-z0-9_]+$/, r.id);
      for (const [name, p] of Object.entries<any>((r.input?.schema as any)?.properties ?? {})) {
        // Every string (or list item) the daemon receives has a length bound.
        const s = p.type === 'array' && p.items ? p.items : p;
        if (s.type === 'string' && !s.enum) assert.ok(s.maxLength > 0 && s.maxLength <= 9_000_000, `${r.id} ${name}`);
      }
      if (r.method === 'POST') {
        assert.equal(r.body.parser, 'raw-json', r.id);
        assert.ok(r.body.limit <= 9 * 1024 * 1024, r.id);
      }
    }
  });

  it('routes every path parameter to an RPC parameter of the same name, each declared in the route input', () => {
    for (const r of live) {
      const names = new Set(inputKeys(r.meta as RpcRoute));
      const declared = Object.keys((r.input?.schema as any)?.properties ?? {});
      for (const seg of r.path.matchAll(/:([A-Za-z]+)\?/g)) assert.ok(names.has(seg[1]), `${r.id}: path parameter ${seg[1]} is not declared`);
      for (const n of names) assert.ok(declared.includes(n), `${r.id}: ${n} is not in the route's input schema`);
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
    for (const r of live) assert.ok(!/^z|wallet|privkey/.test(rpcName(r.meta as RpcRoute, r.id)), r.id);
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

describe('daemon manifest: corectl manifests validate checks the x blocks', function () {
  this.timeout(60_000);

  it('a misspelled key in a route x block fails validation with file:line:column', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'daemonlib-validate-'));
    try {
      const config = path.join(dir, 'node.yaml');
      fs.writeFileSync(config, `dataDir: ${dir}/data\nmanifestsDir: ${dir}/manifests\npluginsDir: ${path.join(REPO_ROOT, 'plugins')}\n`);
      fs.mkdirSync(path.join(dir, 'manifests'));
      const text = fs.readFileSync(path.join(REPO_ROOT, 'manifests/daemon.yaml'), 'utf8');
      const good = path.join(dir, 'manifests/daemon.yaml');
      fs.writeFileSync(good, text);
      const ok = await corectl(['manifests', 'validate', good], config);
      assert.equal(ok.code, 0, ok.stderr);
      assert.match(ok.stdout, /^ok: 1 manifest\(s\), \d+ route\(s\)/);

      // `parms` for `params` on getblockhash: the route would answer 500 at request time; now it never loads.
      const lines = text.split('\n');
      const at = lines.findIndex((l) => l.includes('x: { params: [index] }'));
      assert.ok(at > 0);
      lines[at] = lines[at].replace('params', 'parms');
      const bad = path.join(dir, 'manifests/daemon.yaml');
      fs.writeFileSync(bad, lines.join('\n'));
      const res = await corectl(['manifests', 'validate', bad], config);
      assert.equal(res.code, 1, res.stdout);
      const col = lines[at].indexOf('parms') + 1;
      assert.ok(res.stderr.includes(`${bad}:${at + 1}:${col}: x.parms: is not a known key`), res.stderr);

      // The host refuses the same file when it loads it.
      const node = await startNode({ manifestsDir: path.join(dir, 'manifests'), config: { pluginsDir: path.join(REPO_ROOT, 'plugins') } }).then(
        (n) => n.close().then(() => null),
        (e: Error) => e,
      );
      assert.ok(node && node.message.includes(`:${at + 1}:${col}: x.parms: is not a known key`), String(node));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

function corectl(args: string[], config: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...entryArgs('corectl'), ...args],
      { cwd: REPO_ROOT, env: { ...process.env, CORENODE_CONFIG: config }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
