/**
 * The deployment trigger's web page, measured against the real service (`dist/core/cli/deployer.js` in its
 * own process, one static release deployed) in Debian's headless chromium:
 *   1. the page's script and style as sent (gzipped) and as built;
 *   2. first contentful paint and the time until the page shows the status and the releases (from the
 *      navigation's start, cache disabled), medians of N loads; the baseline is a static page of one
 *      paragraph served by a bare node:http server with the same headers, loaded the same way, interleaved.
 *
 *   npm run bench:deployer-ui [-- --runs 7]
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { PAGE_CSP, pageDir } from '../../plugins/deployer/page.ts';
import { freePortIn } from '../../test/support/ports.ts';
import { launchBrowser } from '../../test/deployer/browser.ts';
import { Repo, githubPush, runCli, tempDir, testEnv, waitFor } from '../../test/deployer/support.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const RUNS = arg('runs', 7);
const port = () => freePortIn(32000, 32499);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;

async function load(page: Page, url: string, shown?: (p: Page) => Promise<unknown>): Promise<{ fcp: number; shown: number }> {
  await page.goto(url);
  if (shown) await shown(page);
  const at = await page.evaluate(() => performance.now());
  const fcp = await page.evaluate(
    () =>
      new Promise<number>((resolve) => {
        const e = performance.getEntriesByName('first-contentful-paint')[0];
        if (e) return resolve(e.startTime);
        new PerformanceObserver((l) => resolve(l.getEntries()[0].startTime)).observe({ type: 'paint', buffered: true });
      }),
  );
  return { fcp, shown: shown ? at : fcp };
}

async function main() {
  const dir = pageDir();
  const files = fs.readdirSync(dir);
  const size = (ext: string, gz: boolean) => files.filter((f) => f.endsWith(gz ? `${ext}.gz` : ext)).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);

  const repo = new Repo();
  const commit = repo.commit({ 'index.html': '<!doctype html><title>app</title><p>app</p>' }, 'a static app');
  const servicePort = await port();
  const root = tempDir();
  const svc = runCli(testEnv(repo, await port(), root, { WEBHOOK_PORT: String(servicePort) }));
  const base = `http://127.0.0.1:${servicePort}`;
  const baseline = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Content-Security-Policy': PAGE_CSP, 'Cache-Control': 'no-store' });
    res.end('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baseline</title></head><body><p>Deployment trigger</p></body></html>');
  });
  const baselinePort = await port();
  await new Promise<void>((r) => baseline.listen(baselinePort, '127.0.0.1', r));
  const browser = await launchBrowser();
  try {
    await waitFor(async () => (await fetch(`${base}/health`).catch(() => null))?.ok, 'the service to listen');
    const payload = githubPush(repo, commit);
    await fetch(`${base}/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-github-event': 'push' }, body: JSON.stringify(payload) });
    await waitFor(async () => (await (await fetch(`${base}/status`)).json()).current_release, 'the release to deploy');

    const page = await browser.context.newPage();
    const cdp = await browser.context.newCDPSession(page);
    await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
    const shown = async (p: Page) => {
      await p.getByRole('heading', { name: /Status: idle/ }).waitFor();
      await p.getByRole('row').filter({ hasText: commit.slice(0, 7) }).waitFor();
    };
    await load(page, `${base}/`, shown); // warm-up: the service's first requests, chromium's first page
    const b: number[] = [];
    const fcp: number[] = [];
    const ready: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      b.push((await load(page, `http://127.0.0.1:${baselinePort}/`)).fcp);
      const r = await load(page, `${base}/`, shown);
      fcp.push(r.fcp);
      ready.push(r.shown);
    }
    const rows = [
      ['page script, gzipped (as sent) / built', `${kb(size('.js', true))} / ${kb(size('.js', false))}`],
      ['page style, gzipped (as sent) / built', `${kb(size('.css', true))} / ${kb(size('.css', false))}`],
      ['script + style + index.html, gzipped', kb(size('.js', true) + size('.css', true) + size('.html', true))],
      [`first contentful paint, baseline static page (median of ${RUNS})`, `${median(b).toFixed(0)} ms`],
      [`first contentful paint, the page (median of ${RUNS})`, `${median(fcp).toFixed(0)} ms (${(median(fcp) / median(b)).toFixed(2)}x the baseline)`],
      [`status and releases shown (median of ${RUNS})`, `${median(ready).toFixed(0)} ms`],
    ];
    const w = Math.max(...rows.map((r) => r[0].length));
    process.stdout.write(`| ${'figure'.padEnd(w)} | value |\n|${'-'.repeat(w + 2)}|---|\n${rows.map((r) => `| ${r[0].padEnd(w)} | ${r[1]} |`).join('\n')}\n`);
    process.stdout.write(`load average: ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
  } finally {
    await browser.close();
    baseline.close();
    svc.child.kill('SIGTERM');
    await svc.exited;
    fs.rmSync(root, { recursive: true, force: true });
    repo.remove();
  }
}

main().catch((e) => {
  process.stderr.write(`${e.stack ?? e}\n`);
  process.exit(1);
});
