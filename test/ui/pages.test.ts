/**
 * The web interface's pages in Debian's chromium against real nodes: a regtest litecoind, the benchmark
 * daemon's test double, and two nodes peered over the peer protocol (identity, daemon, explorer,
 * benchmark, peers and ui plugins; event stream on). The node page shows live data and follows the chain;
 * a user without admin level sees no operator action and the routes refuse him; strings from the API show
 * as characters; every page passes axe-core without serious or critical violations, at desktop and phone
 * width, and is photographed to test-artifacts/ui/.
 */
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { DESKTOP, PHONE, launchBrowser, screenshot, seriousViolations, type TestBrowser } from '../support/browser.ts';
import { startBenchmarkDouble, type BenchmarkDouble } from '../support/benchmark-double.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { startNode, type TestNode } from '../support/node.ts';
import { freePortIn } from '../support/ports.ts';
import { eventually } from '../support/wait.ts';
import { bitcoinWallet, login, type LoggedIn } from '../support/wallets.ts';

/** Markup an attacker can put in strings the API answers: it must show as these characters, never run. */
const XSS = '<img src=x onerror="window.__xss=1">';

describe('ui: pages in a browser against real nodes', function () {
  this.timeout(120_000);
  const operator = bitcoinWallet();
  const A = '127.0.0.2';
  const B = '127.0.0.3';
  let ltc: Regtest;
  let bench: BenchmarkDouble;
  let node: TestNode;
  let peer: TestNode;
  let browser: TestBrowser;
  let admin: LoggedIn;
  let user: LoggedIn;

  async function start(ip: string, port: number, seeds: string[]) {
    return startNode({
      plugins: ['identity', 'daemon', 'explorer', 'benchmark', 'peers', 'ui'],
      port,
      address: ip,
      config: {
        initial: { legacyid: operator.legacyid },
        daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password } },
        explorer: { pollIntervalMs: 100, retryIntervalMs: 200 },
        benchmark: { rpc: { url: bench.url, user: bench.user, password: bench.password } },
        peers: { membership: 'open', seeds, maintainMs: 200, backoffBaseMs: 100, backoffMaxMs: 500, handshakeMs: 3000 },
        node: { eventStream: true },
      },
    });
  }

  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(101);
    bench = await startBenchmarkDouble();
    bench.state.benchmarking = XSS;
    const port = await freePortIn(32000, 32499);
    node = await start(A, port, []);
    peer = await start(B, port, [`${A}:${port}`]);
    admin = await login(node, operator);
    user = await login(node, bitcoinWallet());
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await peer?.close();
    await node?.close();
    await bench?.close();
    await ltc?.stop();
  });

  /** A page of `node` with this session (or none), at this size. */
  async function open(path: string, as: LoggedIn | null, viewport = DESKTOP) {
    const t = await browser.page(viewport);
    await t.page.goto(`${node.url}/#/login-not-a-page`);
    await t.page.evaluate(
      (s) => (s ? localStorage.setItem('corenode.session', JSON.stringify(s)) : localStorage.clear()),
      as && { legacyid: as.legacyid, loginPhrase: as.loginPhrase, signature: as.signature, header: as.header, privilege: as.answer.data.privilege },
    );
    await t.page.goto(`${node.url}/#${path}`);
    await t.page.reload();
    return t;
  }

  const field = (p: Page, name: string) => p.locator(`[data-field="${name}"]`);

  it('the node page shows live data from the node and follows the chain without a reload', async () => {
    const { page, errors } = await open('/node', null);
    await page.locator('[data-live="true"]').waitFor();
    assert.equal(await field(page, 'version').textContent(), (await node.get('/core/version')).json.data);
    const height = await ltc.rpc.call<number>('getblockcount');
    await eventually(async () => (await field(page, 'daemon-height').textContent()) === String(height), { what: 'the daemon height' });
    await eventually(async () => (await field(page, 'explorer-height').textContent()) === String(height), { what: 'the explorer height' });
    await page.getByText('Live: event stream').waitFor();
    await page.locator('tr[data-check="database"]').getByText('ok').waitFor();
    await ltc.mine(2);
    await eventually(async () => (await field(page, 'daemon-height').textContent()) === String(height + 2), { what: 'the new height' });
    await eventually(async () => (await field(page, 'explorer-height').textContent()) === String(height + 2), { what: 'the explorer following' });
    // The peer node dialled this one: an incoming peer with its round-trip time.
    await page.getByRole('table', { name: 'Incoming peers' }).getByText(B).waitFor();
    assert.deepEqual(errors, []);
    await page.close();
  });

  it('a user without admin level sees no operator action, and the routes refuse him; the operator sees them behind a confirmation', async () => {
    const u = await open('/node', user);
    await u.page.locator('.level[data-level="user"]').waitFor();
    await u.page.locator('[data-live="true"]').waitFor();
    assert.equal(await u.page.locator('[data-admin-action]').count(), 0);
    assert.equal(await u.page.getByRole('heading', { name: 'Operator actions' }).count(), 0);
    for (const route of ['/core/restartdaemon', '/core/restartbenchmark', '/explorer/restart', '/core/softupdatecore', '/core/restart']) {
      const r = await node.get(route, { legacyidauth: user.header });
      assert.equal(r.json.data.code, 401, `${route} refuses a user`);
    }
    await u.page.close();

    const a = await open('/node', admin);
    await a.page.locator('.level[data-level="admin"]').waitFor();
    const restart = a.page.getByRole('button', { name: 'Restart explorer' });
    await restart.waitFor();
    assert.equal(await a.page.locator('[data-admin-action]').count(), 5);
    // By keyboard: the button opens the dialog, Escape closes it and nothing is called.
    await restart.focus();
    await a.page.keyboard.press('Enter');
    const dialog = a.page.getByRole('dialog', { name: 'Restart explorer?' });
    await dialog.waitFor();
    await a.page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    await restart.click();
    await dialog.getByRole('button', { name: 'Yes, restart explorer' }).click();
    await a.page.getByRole('status').filter({ hasText: 'Block processing initiated' }).waitFor();
    await a.page.close();
  });

  it('strings from the API show as characters: the benchmark daemon’s status on the node page, a broadcast message on the network page', async () => {
    const { page } = await open('/node', admin);
    await page.getByText(XSS, { exact: true }).first().waitFor();
    // Another node broadcasts markup; this node's network page shows it, live from the event stream.
    const n = await open('/network', null);
    n.errors.length = 0; // from before the reload
    await n.page.getByText('Live: event stream').waitFor();
    await eventually(async () => (await peer.get('/core/connectedpeers')).json?.data?.length > 0, { what: 'the peer connected' });
    const peerAdmin = await login(peer, operator);
    const sent = await peer.post('/core/broadcastmessage', XSS, { legacyidauth: peerAdmin.header });
    assert.equal(sent.json.status, 'success', sent.text);
    await n.page.locator('[data-message]').filter({ hasText: XSS }).first().waitFor();
    assert.deepEqual(n.errors, []);
    for (const p of [page, n.page]) {
      assert.equal(await p.locator('main img').count(), 0);
      assert.equal(await p.evaluate(() => (window as any).__xss), undefined);
    }
    await page.close();
    await n.page.close();
  });

  it('every control of the node page (as the operator) and the login page is reached with Tab and has a name', async () => {
    for (const [path, as] of [
      ['/node', admin],
      ['/login', null],
    ] as const) {
      const { page } = await open(path, as);
      await (path === '/node' ? page.locator('[data-admin-action]').first() : page.locator('#login-phrase')).waitFor();
      const controls = await page.evaluate(() =>
        [...document.querySelectorAll('a[href], button:not([disabled]), input, textarea, select')].filter((e) => !e.closest('dialog') && (e as HTMLElement).offsetParent !== null).length,
      );
      const reached = new Set<string>();
      for (let i = 0; i < controls + 2; i++) {
        await page.keyboard.press('Tab');
        const d = await page.evaluate(() => {
          const e = document.activeElement as HTMLElement;
          const name = e.getAttribute('aria-label') || (e as HTMLInputElement).labels?.[0]?.textContent || e.textContent || '';
          return { key: `${e.tagName}#${e.id}:${name.trim()}:${[...document.querySelectorAll('*')].indexOf(e)}`, name: name.trim(), tag: e.tagName };
        });
        if (d.tag === 'BODY') continue;
        assert.ok(d.name, `a control without a name: ${d.key}`);
        reached.add(d.key);
      }
      assert.ok(reached.size >= controls, `${path}: ${reached.size} of ${controls} controls reached by Tab`);
      await page.close();
    }
  });

  it('the explorer page shows the balance, unspent outputs and transactions of an address', async () => {
    const { page } = await open('/explorer', null);
    await page.getByLabel('Address').fill(ltc.miner);
    await page.getByRole('button', { name: 'Look up' }).click();
    const balance = (await node.get(`/explorer/balance?address=${ltc.miner}`)).json.data;
    await page.locator('[data-field="balance"]').getByText(`${(balance / 1e8).toFixed(8)} coins`).waitFor();
    await page.locator('[data-utxo]').first().waitFor();
    await page.locator('[data-tx]').first().waitFor();
    await page.close();
  });

  for (const [size, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    it(`every page at ${size} width (${viewport.width}x${viewport.height}): no serious or critical axe violation, nothing wider than the screen; screenshots`, async () => {
      for (const [name, path, as] of [
        ['login', '/login', null],
        ['node', '/node', admin],
        ['network', '/network', admin],
        ['explorer', '/explorer', null],
      ] as const) {
        const { page } = await open(path, as, viewport);
        if (name === 'login') await page.locator('#login-phrase').waitFor();
        if (name === 'node') await page.locator('[data-live="true"]').waitFor();
        if (name === 'network') await page.getByRole('heading', { name: 'Broadcast messages' }).waitFor();
        if (name === 'explorer') {
          await page.getByLabel('Address').fill(ltc.miner);
          await page.getByRole('button', { name: 'Look up' }).click();
          await page.locator('[data-utxo]').first().waitFor();
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
