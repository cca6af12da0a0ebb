/**
 * `npm run bench:ui [-- --runs 5 --idle 10]`: what the web interface costs, against baselines measured in
 * the same run:
 *
 *   first page's JS + CSS    the gzipped bytes of every script and stylesheet the node page loads (the
 *                            entry, its chunks and the page's own chunk), as the browser received them;
 *                            goal < 150 KB
 *   first contentful paint   headless chromium (Debian's, through playwright-core), cold cache, the page
 *                            served by a node (identity, daemon, explorer, ui; a regtest litecoind behind
 *                            it); baseline: a static page with one line of text from a bare node:http
 *                            server on the same machine; goal < 1 s
 *   node page live           from navigation to the node page showing the node's data (`data-live`);
 *                            baseline: a static page from the bare server that fetches one JSON answer
 *                            (the node's /core/health, recorded) and writes it into the page; goal < 1.5 s
 *   idle RSS, ui on vs off   `node dist/core/cli/node.js` with every plugin, then with `plugins: {ui: false}`,
 *                            interleaved, RSS after `--idle` seconds; goal: the difference < 10 MB
 *
 * Medians over `--runs`. Ports 32400-32499; temp folders and the browser's profile are removed.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { launchBrowser } from '../../test/support/browser.ts';
import { startLitecoind } from '../../test/support/litecoind.ts';
import { startNode } from '../../test/support/node.ts';
import { freePortIn } from '../../test/support/ports.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const RUNS = arg('runs', 5);
const IDLE_S = arg('idle', 10);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

interface Load {
  fcp: number;
  shown: number;
  jsCssGzip: number;
}

async function load(page: Page, url: string, selector: string): Promise<Load> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.clearBrowserCache');
  await page.goto(url);
  await page.locator(selector).first().waitFor();
  await page.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0);
  return page.evaluate(() => {
    const fcp = performance.getEntriesByName('first-contentful-paint')[0].startTime;
    const bytes = (performance.getEntriesByType('resource') as PerformanceResourceTiming[])
      .filter((r) => /\.(js|css)$/.test(new URL(r.name).pathname))
      .reduce((n, r) => n + r.encodedBodySize, 0);
    // The node page marks it when its data first shows; the baseline page's script does the same.
    return { fcp, shown: performance.getEntriesByName('corenode:live')[0].startTime, jsCssGzip: bytes };
  });
}

/** A bare server: `/` a static page with one line; `/live` a page that fetches `/data` and shows it. */
async function baselineServer(data: string): Promise<{ url: string; close(): Promise<void> }> {
  const live = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baseline</title></head><body><p>baseline</p><pre id="out"></pre><script>fetch('/data').then(r=>r.text()).then(t=>{const o=document.getElementById('out');o.textContent=t;o.setAttribute('data-live','true');performance.mark('corenode:live')})</script></body></html>`;
  const server = http.createServer((req, res) => {
    const [type, body] = req.url === '/data' ? ['application/json', data] : ['text/html; charset=utf-8', live];
    res.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'no-store' });
    res.end(body);
  });
  const port = await freePortIn(32400, 32499);
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

async function idleRss(uiOn: boolean): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ui-bench-'));
  const port = await freePortIn(32400, 32499);
  const config = path.join(dir, 'node.json');
  fs.writeFileSync(config, JSON.stringify({ api: { port, host: '127.0.0.1' }, dataDir: path.join(dir, 'data'), log: { level: 'warn' }, watch: false, ...(uiOn ? {} : { plugins: { ui: false } }) }));
  const child = spawn(process.execPath, ['--max-semi-space-size=2', path.join(ROOT, 'dist/core/cli/node.js')], { env: { ...process.env, CORENODE_CONFIG: config }, stdio: 'ignore' });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/core/version`).then((r) => r.status === 200, () => false);
      if (ok) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    if (uiOn) await fetch(`http://127.0.0.1:${port}/`); // the page served once: what an operator's visit leaves
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) * 1024;
  } finally {
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await gone;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const ltc = await startLitecoind();
  await ltc.mine(10);
  const node = await startNode({
    plugins: ['identity', 'daemon', 'explorer', 'ui'],
    port: await freePortIn(32400, 32499),
    config: { daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password } }, node: { eventStream: true } },
  });
  const base = await baselineServer((await node.get('/core/health')).text);
  const browser = await launchBrowser();
  const ui: Load[] = [];
  const bare: Load[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      for (const which of ['ui', 'bare'] as const) {
        const { page } = await browser.page();
        (which === 'ui' ? ui : bare).push(await load(page, which === 'ui' ? `${node.url}/#/node` : `${base.url}/`, '[data-live="true"]'));
        await page.close();
      }
    }
  } finally {
    await browser.close();
    await base.close();
    await node.close();
    await ltc.stop();
  }
  const on: number[] = [];
  const off: number[] = [];
  for (let i = 0; i < Math.max(3, Math.ceil(RUNS / 2)); i++) {
    on.push(await idleRss(true));
    off.push(await idleRss(false));
  }
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
  const ms = (n: number) => `${Math.round(n)} ms`;
  const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;
  const m = (xs: Load[], k: keyof Load) => median(xs.map((x) => x[k]));
  const rows = [
    ['measure', 'web interface', 'baseline', 'goal'],
    ["first page's JS + CSS, gzipped", kb(m(ui, 'jsCssGzip')), kb(m(bare, 'jsCssGzip')), '< 150 KB'],
    ['first contentful paint', ms(m(ui, 'fcp')), ms(m(bare, 'fcp')), '< 1 s'],
    ['node page shows live data', ms(m(ui, 'shown')), ms(m(bare, 'shown')), '< 1.5 s'],
    ['node idle RSS, ui on / off', mb(median(on)), mb(median(off)), `< 10 MB more (${mb(median(on) - median(off))})`],
  ];
  const w = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) console.log(r.map((x, c) => x.padEnd(w[c])).join('  '));
  console.log(`\nmedians of ${RUNS} page loads (cold cache) and ${on.length} node starts each; load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
}

await main();
