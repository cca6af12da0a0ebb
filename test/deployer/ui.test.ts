/**
 * The deployer's own page (plugins/deployer/ui, served at `/`) in Debian's chromium against a real deployer
 * (real git repository, webhooks, npm builds): the key prompt and a refused key, status and releases, a
 * build log that grows while the page watches, attacker-written text shown as characters, axe-core, and
 * screenshots at desktop and phone width in test-artifacts/ui/.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { freePortIn } from '../support/ports.ts';
import { launchBrowser, screenshots, seriousViolations, type TestBrowser } from './browser.ts';
import { Repo, githubPush, nodeApp, settled, startDeployer, tempDir, testEnv, waitFor, type TestDeployer } from './support.ts';

const KEY = 'the-right-key';
const XSS = '<img src=x onerror=alert(1)> fix "quotes" & <script>alert(2)</script>';
/** This file's ports: the UI tests' range. */
const port = () => freePortIn(32000, 32499);

describe('deployer page (chromium)', function () {
  this.timeout(180_000);
  let repo: Repo;
  let d: TestDeployer;
  let browser: TestBrowser;
  let gate: string;
  let first: string;
  const dialogs: string[] = [];
  const cspErrors: string[] = [];

  const push = (commit: string, message: string) => {
    const p = githubPush(repo, commit);
    p.head_commit.message = message;
    return d.github('push', p);
  };

  const open = async (): Promise<Page> => {
    const page = await browser.context.newPage();
    page.on('dialog', (dlg) => {
      dialogs.push(dlg.message());
      void dlg.dismiss();
    });
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) cspErrors.push(m.text());
    });
    await page.goto(`${d.url}/`);
    return page;
  };

  before(async () => {
    repo = new Repo();
    // A folder the app's user (builds run unprivileged under root) can read: the build waits for a file here.
    const shared = tempDir('deployer-ui-gate-');
    fs.chmodSync(shared, 0o755);
    gate = path.join(shared, 'go');
    first = repo.commit(nodeApp('v1'), XSS);
    d = await startDeployer(testEnv(repo, await port(), tempDir(), { API_KEY: KEY }), await port());
    const ack = await push(first, XSS);
    assert.equal(ack.json?.message, 'Deployment queued');
    await settled(d);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await d?.close();
    repo?.remove();
  });

  it('serves the page with a CSP that allows only the service itself', async () => {
    const res = await fetch(`${d.url}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /connect-src 'self'/);
    const html = await res.text();
    const js = /src="\/ui\/([^"]+\.js)"/.exec(html)![1];
    const asset = await fetch(`${d.url}/ui/${js}`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('cache-control')!, /immutable/);
    assert.equal((await fetch(`${d.url}/ui/nosuch.js`)).status, 404);
  });

  it('asks for the key, refuses a wrong one with a clear message, then shows status and releases', async () => {
    const page = await open();
    await page.getByRole('heading', { name: 'API key' }).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'axe on the key prompt');
    await screenshots(page, 'deployer-key');

    // By keyboard alone: Tab reaches the field, Enter sends the key.
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'api-key');
    await page.keyboard.type('a-wrong-key');
    await page.keyboard.press('Enter');
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'refused this API key' }).waitFor();
    assert.match(await alert.innerText(), /Valid API key required/);

    await page.getByRole('textbox', { name: 'API key' }).fill(KEY);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('heading', { name: /Status: idle/ }).waitFor();
    await page.getByRole('heading', { name: /Health: healthy/ }).waitFor();
    const row = page.getByRole('row').filter({ hasText: first.slice(0, 7) });
    await row.waitFor();
    // The commit message is attacker-written text: it shows as those characters, and nothing ran.
    assert.equal(await row.locator('td.message').innerText(), XSS);
    assert.equal(await page.locator('main img, main script').count(), 0);
    assert.deepEqual(dialogs, []);
    // The key stays in this tab only.
    assert.equal(await page.evaluate(() => sessionStorage.getItem('deployer.apiKey')), KEY);
    assert.equal(await page.evaluate(() => localStorage.length), 0);
    await page.getByRole('button', { name: 'Forget API key' }).click();
    await page.getByRole('alert').filter({ hasText: 'The key was removed from this tab' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.getItem('deployer.apiKey')), null);
    await page.close();
  });

  it('tails a running build live, then shows the new release (axe, screenshots)', async () => {
    const page = await open();
    await page.getByRole('textbox', { name: 'API key' }).fill(KEY);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('heading', { name: /Status: idle/ }).waitFor();

    // (npm echoes the script, so the lines below are matched whole.)
    // The build prints a coloured line, then waits for the test's signal file before its last line.
    const build =
      `console.log('\\x1b[32mbuild step one\\x1b[0m');` +
      `const t=setInterval(()=>{if(require('fs').existsSync('${gate}')){clearInterval(t);console.log('build step two')}},100)`;
    const second = repo.commit(nodeApp('v2', { build }), 'second: slow build');
    await push(second, 'second: slow build');

    const log = page.getByLabel('Build log lines');
    await page.getByRole('heading', { name: /Status: deploying/ }).waitFor();
    await waitFor(async () => /^build step one$/m.test(await log.innerText()), 'the first build line in the page');
    const text = await log.innerText();
    assert.ok(!text.includes('\x1b'), `ANSI escapes are removed: ${JSON.stringify(text)}`);
    assert.ok(!/^build step two$/m.test(text), `the build waits for the test: ${text}`);
    await page.getByRole('status').filter({ hasText: 'live' }).waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'axe while deploying');
    await screenshots(page, 'deployer-deploying');

    // What the page polls: the running deployment's log, by `latest` and by its attempt number.
    const running = await d.get('/logs/latest?format=json', { authorization: `Bearer ${KEY}` });
    assert.ok(running.json.lines.includes('\x1b[32mbuild step one\x1b[0m'), 'the service keeps the log as written');
    assert.match((await d.get('/logs/latest', { authorization: `Bearer ${KEY}` })).text, /"build_status": "running"/);
    assert.equal((await d.get('/logs/attempt-2?format=json', { authorization: `Bearer ${KEY}` })).json.log_file, running.json.log_file);

    // The same page, never reloaded, shows the line the build writes next.
    fs.writeFileSync(gate, '');
    await waitFor(async () => /^build step two$/m.test(await log.innerText()), 'the next build line, live');
    await page.getByRole('heading', { name: /Status: idle/ }).waitFor({ timeout: 60_000 });
    await page.getByRole('row').filter({ hasText: second.slice(0, 7) }).waitFor();
    assert.equal(await page.getByRole('row').filter({ hasText: 'live' }).filter({ hasText: second.slice(0, 7) }).count(), 1);

    // A release's own log, from the table.
    await page.getByRole('button', { name: 'Build log of release 001' }).click();
    await page.getByRole('heading', { name: /Build log: 001-/ }).waitFor();
    await waitFor(async () => (await log.innerText()).includes('Build'), 'the first release log');
    assert.deepEqual(await seriousViolations(page), [], 'axe when idle');
    await page.getByRole('button', { name: 'Back to the newest log' }).click();
    await waitFor(async () => /^build step two$/m.test(await log.innerText()), 'the newest log again');
    await screenshots(page, 'deployer-idle');
    assert.deepEqual(cspErrors, [], 'the page needs nothing its CSP refuses');
    assert.deepEqual(dialogs, []);
    await page.close();
  });

  it('a failed build shows as the last failure, with its log one click away', async () => {
    const page = await open();
    await page.getByRole('textbox', { name: 'API key' }).fill(KEY);
    await page.getByRole('button', { name: 'Use this key' }).click();
    await page.getByRole('heading', { name: /Status: idle/ }).waitFor();
    const broken = repo.commit(nodeApp('v3', { build: "console.log('compiler says no');process.exit(3)" }), 'third: broken build');
    await push(broken, 'third: broken build');
    await page.getByRole('heading', { name: 'Last failed deployment' }).waitFor({ timeout: 60_000 });
    assert.match(await page.locator('.failed').innerText(), new RegExp(`${broken.slice(0, 7)} failed .*build_failed`));
    await page.getByRole('button', { name: 'Show its build log' }).click();
    await page.getByRole('heading', { name: new RegExp(`Build log: ${broken}-FAILED`) }).waitFor();
    await waitFor(async () => /^compiler says no$/m.test(await page.getByLabel('Build log lines').innerText()), 'the failed build log');
    // The release that was live still is.
    assert.equal(await page.getByRole('row').filter({ hasText: 'live' }).count(), 1);
    assert.deepEqual(await seriousViolations(page), [], 'axe with a failure shown');
    await screenshots(page, 'deployer-failed');
    await page.close();
  });

  it('without API_KEY the page opens at once, before any deployment', async () => {
    const bare = await startDeployer(testEnv(new Repo(), await port(), tempDir()), await port());
    try {
      const page = await browser.context.newPage();
      await page.goto(`${bare.url}/`);
      await page.getByRole('heading', { name: /Status: idle/ }).waitFor();
      await page.getByText('No release yet').waitFor();
      await page.getByText('No build log yet').waitFor();
      assert.equal(await page.getByRole('textbox', { name: 'API key' }).count(), 0);
      await page.close();
    } finally {
      await bare.close();
    }
  });

  it('the API key is still required by /status and /logs; /logs/latest is the log of the newest deployment when idle', async () => {
    assert.equal((await d.get('/status')).status, 401);
    assert.equal((await d.get('/logs/latest')).status, 401);
    const latest = await d.get('/logs/latest?format=json', { authorization: `Bearer ${KEY}` });
    assert.equal(latest.status, 200);
    assert.ok(latest.json.lines.includes('compiler says no'), 'the newest deployment is the failed one');
    const s = await settled(d);
    assert.equal(s.releases.length, 2);
    assert.equal(s.failed_commits_count, 1);
  });
});
