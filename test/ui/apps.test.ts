/**
 * The apps pages in Debian's chromium against a real node with the test Docker: an app registered and paid
 * on regtest, installed from the test registry, whose container writes a log line of markup wrapped in ANSI
 * colour escapes. The apps list shows it with its state, live from the event stream; the owner sees its log
 * (the markup as characters, the escapes gone) and its CPU, memory and network charts, stops and starts it behind confirmations and runs
 * `echo hi` in its terminal; another user sees no lifecycle button, no log and no terminal, and the routes
 * (HTTP and the terminal's websocket) refuse him. axe-core at desktop and phone width; screenshots.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { DESKTOP, PHONE, launchBrowser, screenshot, seriousViolations, type TestBrowser } from '../support/browser.ts';
import { ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { freePortIn } from '../support/ports.ts';
import { eventually } from '../support/wait.ts';
import { login, type LoggedIn } from '../support/wallets.ts';
import { component, data, error, last, makeWallets, ndjson, registerPaid, startAppsNode, v8Spec, type AppsNode } from '../apps/support.ts';

const APP = 'uiapp';
const XSS = '<img src=x onerror=alert(1)>';
// Markup in red (ANSI escapes around it), then a tick a second so the log has something to follow.
const CMD = `printf '\\033[31m${XSS}\\033[0m\\n'; i=0; while true; do i=$((i+1)); echo tick $i; sleep 1; done`;

describe('ui: the apps pages in a browser against a node with Docker', function () {
  this.timeout(300_000);
  let docker: TestDocker;
  let ltc: Regtest;
  let node: AppsNode;
  let browser: TestBrowser;
  let owner: LoggedIn;
  let other: LoggedIn;
  const dataDir = fs.mkdtempSync('/tmp/ui-apps-');
  const w = makeWallets();

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    await ltc.mine(101);
    const registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    node = await startAppsNode({ docker, ltc, wallets: w, registryAddress, dataDir, plugins: ['ui'], config: { node: { eventStream: true } }, apps: { monitor: { intervalMs: 300 }, guard: { intervalMs: 300 } } });
    const spec = v8Spec(w.owner.legacyid, APP, [component('log', docker.images.busybox, await freePortIn(32000, 32499), 7000, { commands: ['/bin/sh', '-c', CMD], cpu: 0.2, ram: 100 })]);
    await registerPaid(node, ltc, registryAddress, w.owner, [spec]);
    const lines = ndjson(await node.get(`/apps/installapplocally/${APP}`, node.headers.coreTeam));
    assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    owner = await login(node, w.owner);
    other = await login(node, w.other);
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    if (node) {
      await node.get(`/apps/appremove/${APP}/true`, node.headers.coreTeam).catch(() => {});
      await node.close();
    }
    await ltc?.stop();
    await unmountUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  async function open(path: string, as: LoggedIn | null, viewport = DESKTOP) {
    const t = await browser.page(viewport);
    await t.page.goto(`${node.url}/#/login-not-a-page`);
    await t.page.evaluate(
      (s) => (s ? localStorage.setItem('corenode.session', JSON.stringify(s)) : localStorage.clear()),
      as && { legacyid: as.legacyid, loginPhrase: as.loginPhrase, signature: as.signature, header: as.header, privilege: as.answer.data.privilege },
    );
    await t.page.goto(`${node.url}/#${path}`);
    await t.page.reload();
    t.errors.length = 0;
    return t;
  }
  const stateOf = (p: Page) => p.locator(`tr[data-component="log"] [data-field="state"]`);

  it('the apps page lists the app with its state, ports and resources, and follows a stop and start from the event stream', async () => {
    const { page, errors } = await open('/apps', null);
    await page.getByText('Live: event stream').waitFor();
    await page.getByRole('link', { name: APP }).waitFor();
    await eventually(async () => (await stateOf(page).textContent()) === 'running', { what: 'running', timeoutMs: 30_000 });
    const row = page.locator(`tr[data-app="${APP}"]`);
    await row.getByText('100 MB').waitFor();
    // The page polls every 10 s; the guard's apps.stopped event arrives within its 300 ms interval.
    data(await node.get(`/apps/appstop/${APP}`, node.headers.owner));
    await eventually(async () => (await stateOf(page).textContent()) === 'not running', { what: 'shown stopped', timeoutMs: 5_000 });
    data(await node.get(`/apps/appstart/${APP}`, node.headers.owner));
    await eventually(async () => (await stateOf(page).textContent()) === 'running', { what: 'shown running', timeoutMs: 5_000 });
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('the owner sees the log with the markup as characters and no escapes, and it follows', async () => {
    const { page, errors } = await open(`/apps/manage/${APP}`, owner);
    const dialogs: string[] = [];
    page.on('dialog', (d) => void (dialogs.push(d.message()), d.dismiss()));
    const log = page.locator(`[data-log="${APP}"]`);
    const xssLine = log.locator('div').filter({ hasText: XSS }).first();
    await xssLine.waitFor();
    const text = (await xssLine.textContent()) ?? '';
    assert.ok(text.endsWith(` ${XSS}`), JSON.stringify(text));
    assert.ok(!/[\x00-\x08\x1b]/.test(text), 'no escapes left');
    assert.equal(await page.locator('main img').count(), 0);
    // New ticks appended without a reload (the counter restarted with the container in the first test).
    const lines = () => log.locator('div').count();
    const first = await lines();
    await eventually(async () => (await lines()) >= first + 2, { what: 'followed lines', timeoutMs: 15_000 });
    assert.deepEqual(dialogs, []);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('the owner stops and starts the app behind confirmations', async () => {
    const { page } = await open(`/apps/manage/${APP}`, owner);
    await page.getByRole('heading', { name: 'Actions' }).waitFor();
    assert.equal(await page.locator('[data-admin-action]').count(), 5);
    for (const [label, message, state] of [
      ['Stop', `Application ${APP} stopped`, 'not running'],
      ['Start', `Application ${APP} started`, 'running'],
    ] as const) {
      await page.getByRole('button', { name: label, exact: true }).click();
      await page.getByRole('dialog', { name: `${label}?` }).getByRole('button', { name: `Yes, ${label.toLowerCase()}` }).click();
      await page.getByRole('status').filter({ hasText: message }).waitFor();
      await eventually(async () => (await stateOf(page).textContent()) === state, { what: state, timeoutMs: 10_000 });
    }
    await page.close();
  });

  it('the owner sees CPU, memory and network charts from the monitor\'s history', async () => {
    await eventually(async () => data(await node.get(`/apps/appmonitor/${APP}`, node.headers.owner)).length >= 3, { what: '3 samples', timeoutMs: 30_000 });
    const { page, errors } = await open(`/apps/manage/${APP}`, owner);
    const charts = page.locator(`[data-charts="${APP}"]`);
    await charts.waitFor();
    assert.equal(await charts.locator('canvas').count(), 3);
    const memory = (await page.locator('[data-chart-now="Memory"]').textContent()) ?? '';
    assert.ok(Number(/used ([\d.]+) MB/.exec(memory)?.[1]) > 0, memory);
    assert.match((await page.locator('[data-chart-now="CPU"]').textContent()) ?? '', /used [\d.]+ cores/);
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('the terminal runs `echo hi` in the container and shows hi', async () => {
    const { page, errors } = await open(`/apps/manage/${APP}`, owner);
    await page.getByRole('button', { name: `Open terminal in ${APP}` }).click();
    await page.locator('[data-terminal-state]').getByText('Connected').waitFor();
    await page.keyboard.type('echo hi');
    await page.keyboard.press('Enter');
    const rows = async () => (await page.locator('.xterm-rows > div').allTextContents()).map((l) => l.trim());
    await eventually(async () => (await rows()).includes('hi'), { what: 'hi on a line of its own', timeoutMs: 10_000 });
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('another user sees no lifecycle button, log or terminal, and the routes refuse him', async () => {
    const { page } = await open(`/apps/manage/${APP}`, other);
    await page.locator('.level[data-level="user"]').waitFor();
    await stateOf(page).getByText('running').waitFor();
    assert.equal(await page.locator('[data-admin-action]').count(), 0);
    assert.equal(await page.locator('[data-log]').count(), 0);
    assert.equal(await page.getByRole('button', { name: /terminal/ }).count(), 0);
    for (const route of [`/apps/appstart/${APP}`, `/apps/appstop/${APP}`, `/apps/apprestart/${APP}`, `/apps/redeploy/${APP}`, `/apps/appremove/${APP}`, `/apps/applogpolling/${APP}`])
      assert.equal(error(await node.get(route, node.headers.other)).code, 401, route);
    // The terminal's websocket with his session as subprotocols, as the page would send it: refused.
    const outcome = await page.evaluate(
      (header) =>
        new Promise<string>((resolve) => {
          const enc = btoa(header).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
          const ws = new WebSocket(`ws://${location.host}/ws/apps/exec/uiapp`, ['legacyidauth', enc]);
          ws.onopen = () => resolve('open');
          ws.onclose = () => resolve('closed');
        }),
      other.header,
    );
    assert.equal(outcome, 'closed');
    await page.close();
  });

  for (const [size, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    it(`the apps pages at ${size} width: no serious or critical axe violation, nothing wider than the screen; screenshots`, async () => {
      for (const [name, path] of [
        ['apps', '/apps'],
        ['app', `/apps/manage/${APP}`],
      ] as const) {
        const { page } = await open(path, owner, viewport);
        await stateOf(page).getByText('running').waitFor();
        if (name === 'app') {
          await page.locator(`[data-log="${APP}"] div`).first().waitFor();
          await page.getByRole('button', { name: `Open terminal in ${APP}` }).click();
          await page.locator('[data-terminal-state]').getByText('Connected').waitFor();
        }
        const violations = await seriousViolations(page);
        assert.deepEqual(violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`), [], `${name} at ${size}`);
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        assert.ok(overflow <= 0, `${name} at ${size} is ${overflow} px wider than the screen`);
        await screenshot(page, `${name}-${size}`);
        await page.close();
      }
    });
  }
});
