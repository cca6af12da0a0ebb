/**
 * The server side of scripts/bench/host.ts, in its own process so the load generator does not share its
 * thread: `koa` (a bare Koa + @koa/router app answering /core/version) or `host` (our host with the core
 * and host manifests, plus a generated 500-route plugin). It reports over IPC and swaps manifests on request.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import { REPO_ROOT, resolveConfig } from '../../core/config.ts';
import { Host } from '../../core/host.ts';
import { VERSION } from '../../core/version.ts';

const t0 = performance.now();
const mode = process.argv[2];
const send = (msg: unknown) => process.send!(msg);

/** A manifest of `n` routes for the generated `bulk` plugin; `variant` changes every path. */
function bulkManifest(n: number, variant: string): string {
  const lines = ['format: 1', 'plugin: bulk', 'version: 1.0.0', 'prefix: /bulk', 'defaults: { method: GET, level: public }', 'routes:'];
  for (let i = 0; i < n; i++) lines.push(`  - { id: bulk.r${i}, path: /${variant}/r${i}/:x?, handler: hit }`);
  return lines.join('\n') + '\n';
}

async function startKoa() {
  const app = new Koa();
  const router = new Router();
  router.get('/core/version', (ctx) => {
    ctx.body = { status: 'success', data: VERSION };
  });
  app.use(router.routes());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return (server.address() as AddressInfo).port;
}

async function startHost() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corenode-bench-'));
  const manifests = path.join(dir, 'manifests');
  const plugins = path.join(dir, 'plugins');
  fs.mkdirSync(manifests);
  fs.mkdirSync(path.join(plugins, 'bulk'), { recursive: true });
  fs.mkdirSync(path.join(plugins, 'node'));
  for (const f of ['node.yaml', 'host.yaml']) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', f), path.join(manifests, f));
  // The real core plugin, re-exported from the temp plugins folder.
  fs.writeFileSync(path.join(plugins, 'node', 'index.ts'), `export { default } from '${path.join(REPO_ROOT, 'plugins/node/index.ts')}';\n`);
  fs.writeFileSync(
    path.join(plugins, 'bulk', 'index.ts'),
    `import { definePlugin } from '${path.join(REPO_ROOT, 'core/plugin-api.ts')}';\n` +
      `export default definePlugin({ id: 'bulk', version: '1.0.0', setup: () => ({ handlers: { hit: ({ params }) => params.x ?? 'hit' } }) });\n`,
  );
  const bulk = path.join(manifests, 'bulk.yaml');
  fs.writeFileSync(bulk, bulkManifest(500, 'a'));
  const config = resolveConfig({ dataDir: path.join(dir, 'data'), manifestsDir: manifests, pluginsDir: plugins, log: { level: 'silent' }, watch: false }, 'bench');
  const host = new Host({ config });
  const port = await host.listen(0, '127.0.0.1');
  await host.start();
  let flip = false;
  process.on('message', async (msg: { swap?: boolean }) => {
    if (!msg.swap) return;
    flip = !flip;
    fs.writeFileSync(bulk, bulkManifest(500, flip ? 'b' : 'a'));
    const s = performance.now();
    const res = await host.reload();
    send({ swapMs: performance.now() - s, ok: res.ok, routes: host.routes.length });
  });
  process.on('disconnect', () => void host.close().finally(() => fs.rmSync(dir, { recursive: true, force: true })));
  return port;
}

// CPU time this process spends, read before and after a measured slice: CPU per request does not depend
// on what else the machine runs, unlike req/s.
process.on('message', (msg: { cpu?: boolean }) => {
  if (msg.cpu) {
    const u = process.cpuUsage();
    send({ cpuMicros: u.user + u.system });
  }
});

const port = mode === 'koa' ? await startKoa() : await startHost();
const startMs = performance.now() - t0;
setTimeout(() => {
  globalThis.gc?.();
  send({ ready: true, port, startMs, rss: process.memoryUsage().rss });
}, 500);
