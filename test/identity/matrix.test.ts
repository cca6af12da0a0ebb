/**
 * The privilege matrix, generated from the live route table of a node with every plugin enabled: for each
 * route and each caller level (public, user, appowner, coreteam, admin), a caller below the route's level
 * gets body code 401 and its handler never runs; a caller at or above it gets past auth (the handler runs,
 * or the input validation that follows auth answers). Plugins are configured from their own configSchema,
 * with unreachable endpoints and harmless commands, so the matrix follows routes as they are added.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../../core/config.ts';
import { loadManifestFile } from '../../core/manifest/parse.ts';
import { createAjv } from '../../core/manifest/schema.ts';
import type { BoundRoute } from '../../core/http/chain.ts';
import type { Level } from '../../core/plugin-api.ts';
import { startNode, tempDir, type TestNode } from '../support/node.ts';
import { bitcoinWallet, ethereumWallet, type TestWallet } from '../support/wallets.ts';
import { login } from '../support/wallets.ts';

const CALLERS = ['public', 'user', 'appowner', 'coreteam', 'admin'] as const;
type CallerLevel = (typeof CALLERS)[number];

/** Who passes each route level (spec, Authentication): compound levels are ORs; admin is no app party. */
const PASSES: Record<Level, readonly CallerLevel[]> = {
  public: CALLERS,
  user: ['user', 'appowner', 'coreteam', 'admin'],
  appowner: ['appowner'],
  appownerabove: ['appowner', 'coreteam'],
  coreteam: ['coreteam'],
  admin: ['admin'],
  adminandcoreteam: ['admin', 'coreteam'],
};

const APP = 'matrixapp';
const UNREACHABLE = 'http://127.0.0.1:1/';

/** A config section that satisfies a plugin's schema, pointing every endpoint nowhere and every command at a no-op. */
function synthesise(schema: any, key = ''): unknown {
  if (!schema || typeof schema !== 'object') return undefined;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (/url$/i.test(key) && (type === 'string' || !type)) return UNREACHABLE;
  if (/command$/i.test(key) && (type === 'array' || schema.items)) return [process.execPath, '--version'];
  if (/waitms$/i.test(key)) return schema.minimum ?? 0;
  if (/^(user|username|password)$/i.test(key) && type === 'string') return 'x';
  if (type === 'object' || schema.properties) {
    const out: Record<string, unknown> = {};
    const required = new Set<string>(schema.required ?? []);
    for (const [k, sub] of Object.entries<any>(schema.properties ?? {})) {
      const v = synthesise(sub, k);
      if (v !== undefined) out[k] = v;
      else if (required.has(k) && sub.default === undefined) out[k] = placeholder(sub);
    }
    return Object.keys(out).length || required.size ? out : undefined;
  }
  return undefined;
}

function placeholder(schema: any): unknown {
  if (schema.enum) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === 'integer' || type === 'number') return schema.minimum ?? 1;
  if (type === 'boolean') return false;
  if (type === 'array') return [];
  if (type === 'object') return synthesise(schema) ?? {};
  return 'x';
}

/** The node manifests whose plugin exists, copied to a folder; plugins whose config cannot be made are noted. */
async function prepare(): Promise<{ manifestsDir: string; config: Record<string, unknown>; skipped: string[] }> {
  const dir = tempDir('corenode-matrix-');
  const config: Record<string, unknown> = {};
  const skipped: string[] = [];
  const ajv = createAjv({ useDefaults: true });
  for (const f of fs.readdirSync(path.join(REPO_ROOT, 'manifests')).filter((x) => /\.ya?ml$/.test(x))) {
    const file = path.join(REPO_ROOT, 'manifests', f);
    let m;
    try {
      m = loadManifestFile(file);
    } catch (e) {
      skipped.push(`${f}: manifest does not load (${(e as Error).message})`);
      continue;
    }
    if (m.listener !== 'api') continue;
    if (m.plugin !== 'host') {
      const index = path.join(REPO_ROOT, 'plugins', m.plugin, 'index.ts');
      if (!fs.existsSync(index)) {
        skipped.push(`${m.plugin}: no plugins/${m.plugin}/index.ts`);
        continue;
      }
      const def = (await import(pathToFileURL(index).href)).default;
      if (def?.configSchema) {
        const section = synthesise(def.configSchema) ?? {};
        if (!ajv.validate(def.configSchema, structuredClone(section))) {
          skipped.push(`${m.plugin}: no config could be made from its schema (${ajv.errorsText()})`);
          continue;
        }
        config[m.plugin] = section;
      }
    }
    fs.copyFileSync(file, path.join(dir, f));
  }
  return { manifestsDir: dir, config, skipped };
}

/**
 * Fill path parameters (the app parameter names the test app; a parameter whose schema gives `examples`
 * takes the first, e.g. a file name of a fixed form), keeping `/:x?` segments.
 */
function fillPath(p: string, appParam: string, params?: object): string {
  const props = ((params as { properties?: Record<string, { examples?: unknown[] }> } | undefined)?.properties ?? {});
  return p.replace(/:([A-Za-z][A-Za-z0-9_]*)\??/g, (_, name) => (name === appParam ? APP : String(props[name]?.examples?.[0] ?? 'x1')));
}

function requestFor(r: BoundRoute, header: string | undefined): { url: string; init: RequestInit } {
  const s = r.spec;
  const headers: Record<string, string> = header ? { legacyidauth: header } : {};
  let url = fillPath(s.path, s.appParam, s.params);
  if (s.query !== false && !s.path.includes(`:${s.appParam}`)) url += `?${s.appParam}=${APP}`;
  const init: RequestInit = { method: s.method, headers };
  if (s.method === 'POST' && s.body.parser !== 'none') {
    if (s.body.parser === 'multipart') {
      const form = new FormData();
      form.set(s.appParam, APP);
      init.body = form;
    } else {
      headers['content-type'] = s.body.parser === 'json' ? 'application/json' : 'text/plain';
      init.body = JSON.stringify({ [s.appParam]: APP });
    }
  }
  return { url, init };
}

describe('identity: privilege matrix over every route of every enabled plugin', function () {
  this.timeout(600_000);
  let node: TestNode;
  let skipped: string[] = [];
  const ran: string[] = [];
  const wallets: Record<Exclude<CallerLevel, 'public'>, TestWallet> = {
    user: bitcoinWallet(),
    appowner: ethereumWallet(),
    coreteam: bitcoinWallet(false),
    admin: bitcoinWallet(),
  };
  const headers = new Map<CallerLevel, string>();
  const realExit = process.exit;

  before(async () => {
    const prep = await prepare();
    skipped = prep.skipped;
    node = await startNode({
      manifestsDir: prep.manifestsDir,
      config: { ...prep.config, initial: { legacyid: wallets.admin.legacyid }, coreTeam: [wallets.coreteam.legacyid] },
      onHandler: (id) => ran.push(id),
    });
    await node.host.stores.get('identity', 'appowners').insert({ appname: APP, owner: wallets.appowner.legacyid });
    // A restart or shutdown route must not end the test run.
    process.exit = ((code?: number) => {
      throw new Error(`a handler called process.exit(${code})`);
    }) as typeof process.exit;
  });
  after(async () => {
    process.exit = realExit;
    await node?.close();
  });

  /** The caller's header, logging in again when a logout route (run as that caller) ended its session. */
  async function headerOf(level: CallerLevel): Promise<string | undefined> {
    if (level === 'public') return undefined;
    const h = headers.get(level);
    if (h && (await node.host.auth.resolve(h)).authenticated) return h;
    const l = await login(node, wallets[level]);
    headers.set(level, l.header);
    return l.header;
  }

  it('refuses every caller below each route\'s level (401, no handler) and lets every caller at or above it through', async function () {
    for (const s of skipped) console.log(`      (matrix skips ${s})`);
    const routes = node.host.routes.filter((r) => r.spec.method !== 'WS' && r.spec.method !== 'SSE' && !r.spec.removed && !r.spec.httpsOnly);
    assert.ok(routes.some((r) => r.spec.plugin === 'identity'), 'the identity routes are in the table');
    const problems: string[] = [];
    const counts = { refused: 0, passed: 0 };
    const levelsSeen = new Set<Level>();
    const notRunning = new Map<string, string>();
    for (const r of routes) {
      if (notRunning.has(r.spec.plugin)) continue;
      if (r.spec.gate) node.host.gates.set(r.spec.gate, true);
      levelsSeen.add(r.spec.level);
      for (const level of CALLERS) {
        const { url, init } = requestFor(r, await headerOf(level));
        ran.length = 0;
        let json: any;
        try {
          const res = await fetch(node.url + url, { ...init, signal: AbortSignal.timeout(5000) });
          json = await res.json().catch(() => undefined);
        } catch {
          json = undefined; // a slow handler: whether it ran is what counts
        }
        if (json?.data?.name === 'PluginDisabled') {
          // A plugin that could not start with a made-up config: noted, not a finding about levels.
          notRunning.set(r.spec.plugin, json.data.message);
          break;
        }
        const handled = ran.includes(r.spec.id);
        const where = `${r.spec.id} (${r.spec.level}) as ${level}: ${JSON.stringify(json)?.slice(0, 160)}`;
        if (PASSES[r.spec.level].includes(level)) {
          const pastAuth = handled || json?.data?.name === 'ValidationError';
          if (!pastAuth) problems.push(`not let through: ${where}`);
          else counts.passed++;
        } else {
          if (handled) problems.push(`handler ran for a refused caller: ${where}`);
          else if (json?.status !== 'error' || json?.data?.code !== 401) problems.push(`not answered body code 401: ${where}`);
          else counts.refused++;
        }
      }
    }
    for (const [id, why] of notRunning) console.log(`      (matrix skips plugin ${id}: ${why})`);
    console.log(`      ${routes.length} routes × ${CALLERS.length} callers: ${counts.refused} refused with 401, ${counts.passed} let through; levels: ${[...levelsSeen].join(', ')}`);
    assert.deepEqual(problems, []);
    for (const l of ['public', 'user', 'admin'] as Level[]) assert.ok(levelsSeen.has(l), `a ${l} route was checked`);
  });
});
