/**
 * The contract every route keeps, whatever plugins exist when this runs: for an anonymous caller and for
 * malformed input (junk path segments, query values, bodies, headers) it answers in the envelope, or with a
 * wire status its route declares or the host implies (core/http/openapi.ts wireStatuses) — never a 500, never an
 * unhandled error, never a hang. Plugins that need external daemons are pointed at unreachable addresses.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { WebSocket } from 'ws';
import type { BoundRoute } from '../../core/http/chain.ts';
import { REPO_ROOT, resolveConfig } from '../../core/config.ts';
import { createDeployerHost } from '../support/deployer.ts';
import type { Host } from '../../core/host.ts';
import { loadManifestDir, type RouteSpec } from '../../core/manifest/parse.ts';
import { wireStatuses } from '../../core/http/openapi.ts';
import { startNode, tempDir, type TestNode } from '../support/node.ts';
import { assertValidOpenApi } from '../support/openapi.ts';
import { probesFor, send, type Outcome, type Probe } from './probe.ts';

const MANIFESTS = path.join(REPO_ROOT, 'manifests');
const PER_REQUEST_MS = 10_000;
const UNREACHABLE = 'http://127.0.0.1:1';

/** Config sections that point plugins at daemons that are not there (only for plugins that exist). */
function contractConfig(root: string): Record<string, unknown> {
  const sections: Record<string, unknown> = {
    daemon: { rpc: { url: UNREACHABLE, user: 'contract', password: 'contract' }, timeoutMs: 2000, startCommand: ['/bin/false'], stopWaitMs: 0, startWaitMs: 0 },
    benchmark: { rpc: { url: UNREACHABLE, user: 'contract', password: 'contract' }, timeoutMs: 2000 },
    explorer: { autoStart: false },
    // Never a real Docker (a machine's system daemon included): listings answer DockerUnavailable.
    apps: { docker: { socketPath: path.join(root, 'no-docker.sock') } },
    deployer: { root: path.join(root, 'deploy'), repoUrl: `${root}/no-such-repo.git`, appPort: 1, webhookSecret: 'contract-secret', signatureVerify: true, rateLimitPerMinute: 0 },
  };
  return Object.fromEntries(Object.entries(sections).filter(([id]) => fs.existsSync(path.join(REPO_ROOT, 'plugins', id, 'index.ts'))));
}

/** What is wrong with one answer, or null. */
function violation(r: BoundRoute, out: Outcome): string | null {
  if (out.error) return out.error === 'timeout' ? `no answer within ${PER_REQUEST_MS} ms` : `connection error: ${out.error}`;
  const allowed = new Set([200, ...wireStatuses(r)]);
  if (!r.spec.envelope) return out.status >= 500 && !allowed.has(out.status) ? `HTTP ${out.status}` : null;
  if (!allowed.has(out.status)) return `HTTP ${out.status}, not a status this route declares (${[...allowed].join(', ')})`;
  if (out.contentType.startsWith('text/event-stream')) return null;
  let body: any;
  try {
    body = JSON.parse(out.text);
  } catch {
    return `HTTP ${out.status} with a body that is not JSON: ${out.text.slice(0, 80)}`;
  }
  if (!body || (body.status !== 'success' && body.status !== 'error') || !('data' in body)) return `not an envelope: ${out.text.slice(0, 120)}`;
  if (body.status === 'error') {
    const d = body.data ?? {};
    if (!['number', 'string'].includes(typeof d.code) || typeof d.name !== 'string' || typeof d.message !== 'string')
      return `error data lacks code/name/message: ${out.text.slice(0, 120)}`;
    if (d.name === 'InternalError') return 'an unhandled error inside the handler (InternalError)';
  }
  return null;
}

async function pool<T>(items: T[], size: number, fn: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: size }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

async function probeRoute(host: Host, base: URL, spec: RouteSpec): Promise<string[]> {
  const r = host.routes.find((x) => x.spec.id === spec.id);
  assert.ok(r, `${spec.id} is served`);
  const problems: string[] = [];
  const probes: Probe[] = [r.spec.path, ...r.spec.aliases].flatMap((p) => probesFor(r, p));
  await pool(probes, 8, async (p) => {
    const out = await send(base, p, PER_REQUEST_MS);
    const v = violation(r, out);
    if (v) problems.push(`${p.method} ${p.path.slice(0, 100)} [${p.why}]: ${v}`);
  });
  return problems;
}

/** A websocket route: the upgrade either opens or is refused with a plain status; a GET is not routed. */
async function probeSocket(base: URL, spec: RouteSpec): Promise<string[]> {
  const problems: string[] = [];
  const paths = [spec.path.replace(/:([A-Za-z]\w*)\??/g, 'test'), spec.path.replace(/:([A-Za-z]\w*)\??/g, '%00'), spec.path.replace(/:([A-Za-z]\w*)\??/g, 'a'.repeat(4096))];
  for (const p of paths) {
    const outcome = await new Promise<string>((resolve) => {
      const ws = new WebSocket(`ws://${base.host}${p}`, { handshakeTimeout: PER_REQUEST_MS });
      ws.once('open', () => (ws.terminate(), resolve('open')));
      ws.once('unexpected-response', (_req, res) => (res.resume(), resolve(String(res.statusCode))));
      ws.once('error', (e) => resolve(`error ${e.message}`));
    });
    if (!['open', '400', '401', '403', '404', '410', '503'].includes(outcome)) problems.push(`WS ${p.slice(0, 80)}: ${outcome}`);
  }
  return problems;
}

function routesOf(service: string): RouteSpec[] {
  return loadManifestDir(MANIFESTS)
    .filter((m) => m.listener === service)
    .flatMap((m) => m.routes);
}

function describeService(service: string, start: (root: string) => Promise<{ host: Host; url: string; close(): Promise<void> }>) {
  const specs = routesOf(service);
  if (!specs.length) return;
  describe(`contract: every ${service} route`, function () {
    this.timeout(120_000);
    let root: string;
    let served: { host: Host; url: string; close(): Promise<void> };
    before(async () => {
      root = tempDir('corenode-contract-');
      served = await start(root);
    });
    after(async () => {
      await served?.close();
      fs.rmSync(root, { recursive: true, force: true });
    });

    for (const spec of specs) {
      it(`${spec.id} (${spec.method} ${spec.path})`, async () => {
        const base = new URL(served.url);
        const problems = spec.method === 'WS' ? await probeSocket(base, spec) : await probeRoute(served.host, base, spec);
        assert.deepEqual(problems.slice(0, 15), [], `${problems.length} bad answers`);
      });
    }

    if (specs.some((s) => s.id === 'host.openapi')) {
      it('describes every route in a valid OpenAPI 3.1 document', async () => {
        const out = await send(new URL(served.url), { method: 'GET', path: '/openapi.json', why: 'openapi' }, PER_REQUEST_MS);
        const doc = JSON.parse(out.text);
        await assertValidOpenApi(doc);
        const ops = Object.values<Record<string, { operationId: string }>>(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
        for (const spec of specs) assert.ok(ops.includes(spec.id) || ops.some((id) => id.startsWith(`${spec.id}~`)), `${spec.id} is in the document`);
      });
    }

    it('still answers after all of it', async () => {
      const any = served.host.routes.find((r) => r.spec.method === 'GET' && !r.spec.path.includes(':'))!;
      const out = await send(new URL(served.url), { method: 'GET', path: any.spec.path, why: 'alive' }, PER_REQUEST_MS);
      assert.ok(out.status > 0 && out.status < 500);
    });
  });
}

describe('contract: body rules of the spec', () => {
  it('every POST under /daemon, /benchmark, /id and /legacyid reads its raw body as JSON', () => {
    const wrong = routesOf('node')
      .filter((r) => r.method === 'POST' && !r.removed)
      .filter((r) => [r.path, ...r.aliases].some((p) => /^\/(daemon|benchmark|id|legacyid)\//.test(p)))
      .filter((r) => r.body.parser !== 'raw-json')
      .map((r) => `${r.id}: ${r.body.parser}`);
    assert.deepEqual(wrong, []);
  });
});

describe('contract: alias rules of the spec (Conventions)', () => {
  const SPEC = path.resolve(REPO_ROOT, '../shared/spec/node-api.md');
  const served = routesOf('api');
  const paths = (r: RouteSpec) => [r.path, ...r.aliases];

  it('the spec still states the rules checked here', function () {
    if (!fs.existsSync(SPEC)) this.skip();
    const text = fs.readFileSync(SPEC, 'utf8');
    assert.match(text, /every `\/daemon\/\*legacynode\*` route aliases its `\*corenode\*` counterpart/);
    assert.match(text, /Every `\/legacyid\/\*` route aliases the matching `\/id\/\*` route/);
    assert.match(text, /`\/core\/legacyid` aliases `\/core\/id`/);
  });

  it('every /daemon/*corenode* route answers at its *legacynode* name too (removed routes included)', () => {
    const daemon = served.filter((r) => r.path.startsWith('/daemon/') && r.path.includes('corenode'));
    assert.ok(daemon.length >= 5, 'the daemon manifest declares its corenode routes');
    const missing = daemon.filter((r) => !paths(r).includes(r.path.replaceAll('corenode', 'legacynode'))).map((r) => `${r.id}: ${r.path.replaceAll('corenode', 'legacynode')}`);
    assert.deepEqual(missing, []);
  });

  it('every /id/* route answers under /legacyid/* too, and /core/legacyid aliases /core/id', () => {
    const missing = served.filter((r) => r.path.startsWith('/id/') && !paths(r).includes(r.path.replace(/^\/id\//, '/legacyid/'))).map((r) => r.id);
    assert.deepEqual(missing, []);
    assert.ok(served.some((r) => r.path === '/core/id' && r.aliases.includes('/core/legacyid')));
  });
});

describeService('api', async (root) => {
  const node: TestNode = await startNode({ dataDir: path.join(root, 'data'), config: contractConfig(root) });
  return node;
});

describeService('deployer', async (root) => {
  // Builds run as an unprivileged user when the tests run as root: it must reach DEPLOY_ROOT under root.
  fs.chmodSync(root, 0o755);
  const config = resolveConfig(
    { listener: 'deployer', api: { port: 0, host: '127.0.0.1' }, dataDir: path.join(root, 'deployer-state'), log: { level: process.env.TEST_LOG ?? 'silent' }, watch: false, ...contractConfig(root) },
    'contract config',
  );
  const host = createDeployerHost({ config });
  await host.start();
  const port = await host.listen(0, '127.0.0.1');
  return { host, url: `http://127.0.0.1:${port}`, close: () => host.close() };
});
