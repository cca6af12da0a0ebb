/**
 * The web interface's login, three ways, in Debian's chromium against a real node (identity and ui
 * plugins): (a) the phrase shown and a pasted signature, (b) an injected Ethereum provider's personal_sign
 * (a test double signing with a known key), (c) the wallet deep link, whose callback the test posts to as
 * a wallet app would while the page waits on its websocket; the session's level shown; log out of this
 * session and of all.
 */
import assert from 'node:assert/strict';
import { Wallet, getBytes } from 'ethers';
import { launchBrowser, type TestBrowser } from '../support/browser.ts';
import { startNode, type TestNode } from '../support/node.ts';
import { freePortIn } from '../support/ports.ts';
import { authHeader, bitcoinWallet } from '../support/wallets.ts';

/**
 * TEST DOUBLE of a browser's Ethereum wallet (EIP-1193 `window.ethereum`, as MetaMask injects it): answers
 * eth_requestAccounts with the key's address and signs personal_sign requests with the key, in the test
 * process (the page reaches it through an exposed function).
 */
async function ethereumProviderDouble(page: import('playwright-core').Page, wallet: Wallet): Promise<string[]> {
  const signed: string[] = [];
  await page.exposeFunction('__ethereumDoubleSign', async (hexMessage: string) => {
    signed.push(hexMessage);
    return wallet.signMessage(getBytes(hexMessage));
  });
  await page.addInitScript((address: string) => {
    (window as any).ethereum = {
      isMetaMask: true,
      async request({ method, params }: { method: string; params?: unknown[] }) {
        if (method === 'eth_requestAccounts' || method === 'eth_accounts') return [address];
        if (method === 'personal_sign') return (window as any).__ethereumDoubleSign(params![0]);
        throw Object.assign(new Error(`unsupported ${method}`), { code: 4200 });
      },
    };
  }, wallet.address);
  return signed;
}

describe('ui: login in a browser', function () {
  this.timeout(60_000);
  const operator = bitcoinWallet();
  let node: TestNode;
  let browser: TestBrowser;

  before(async () => {
    node = await startNode({ plugins: ['identity', 'ui'], port: await freePortIn(32000, 32499), config: { initial: { legacyid: operator.legacyid } } });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await node?.close();
  });

  /** The login page with its phrase shown (the page has opened its websocket by then). */
  async function loginPage(setup?: (p: import('playwright-core').Page) => Promise<unknown>) {
    const t = await browser.page();
    await setup?.(t.page);
    // One browser profile for the file: start each test logged out.
    await t.page.goto(`${node.url}/#/login`);
    await t.page.evaluate(() => localStorage.clear());
    await t.page.reload();
    const phrase = await t.page.locator('#login-phrase').inputValue({ timeout: 15_000 });
    assert.match(phrase, /^[0-9]{13}[0-9a-z]+$/);
    return { ...t, phrase };
  }

  const stored = (p: import('playwright-core').Page) => p.evaluate(() => JSON.parse(localStorage.getItem('corenode.session') ?? 'null'));

  it('(a) shows the phrase with a copy button and a QR code, and logs in with a pasted signature; the operator sees level admin', async () => {
    const { page, phrase, errors } = await loginPage();
    assert.equal(await page.getByRole('button', { name: 'Copy phrase' }).count(), 1);
    assert.equal(await page.getByRole('img', { name: 'QR code of the login phrase' }).count(), 1);
    await page.getByLabel('Your address (legacyid)').fill(operator.legacyid);
    await page.getByLabel('Signature of the phrase').fill(operator.sign(phrase));
    await page.getByRole('button', { name: 'Log in with signature' }).click();
    await page.locator('.level[data-level="admin"]').waitFor();
    assert.equal((await stored(page)).header, authHeader(operator.legacyid, operator.sign(phrase), phrase));
    // The page's session is a live one on the node.
    const s = await stored(page);
    assert.equal((await node.get('/id/loggedsessions', { legacyidauth: s.header })).json.status, 'success');
    // Nothing refused by the page's policy, no script error (this node serves no daemon routes: their 404s are expected).
    assert.deepEqual(errors.filter((e) => !e.startsWith('Failed to load resource: the server responded with a status of 404')), []);
    await page.close();
  });

  it('(a) a wrong signature is refused and said so; no session is kept', async () => {
    const { page } = await loginPage();
    const other = bitcoinWallet();
    await page.getByLabel('Your address (legacyid)').fill(operator.legacyid);
    await page.getByLabel('Signature of the phrase').fill(other.sign('something else'));
    await page.getByRole('button', { name: 'Log in with signature' }).click();
    await page.getByRole('alert').getByText(/signature/i).first().waitFor();
    assert.equal(await stored(page), null);
    await page.close();
  });

  it('(b) an injected Ethereum wallet signs the phrase with personal_sign; level user', async () => {
    const wallet = Wallet.createRandom();
    let signed: string[] = [];
    const { page, phrase } = await loginPage(async (p) => (signed = await ethereumProviderDouble(p, wallet as unknown as Wallet)));
    await page.getByRole('button', { name: 'Sign with browser wallet' }).click();
    await page.locator('.level[data-level="user"]').waitFor();
    assert.deepEqual(signed, ['0x' + Buffer.from(phrase, 'utf8').toString('hex')], 'the wallet was asked to sign the phrase, hex-encoded as personal_sign takes it');
    assert.equal((await stored(page)).legacyid.toLowerCase(), wallet.address.toLowerCase());
    await page.close();
  });

  it('(c) a wallet app opened by the deep link posts to the callback; the page logs in from its websocket', async () => {
    const user = bitcoinWallet();
    const { page, phrase } = await loginPage();
    const href = await page.locator('#wallet-link').getAttribute('href');
    const link = new URL(href!);
    assert.equal(link.protocol, 'core:');
    assert.equal(link.searchParams.get('action'), 'sign');
    assert.equal(link.searchParams.get('message'), phrase);
    assert.equal(link.searchParams.get('callback'), `${node.url}/id/verifylogin`);
    assert.match(link.searchParams.get('icon')!, /\/ui\/assets\/icon\.svg$/);
    // What the wallet does: sign the message and post {loginPhrase, legacyid, signature} to the callback.
    const res = await fetch(link.searchParams.get('callback')!, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ loginPhrase: link.searchParams.get('message'), legacyid: user.legacyid, signature: user.sign(phrase) }),
    });
    assert.equal((await res.json()).status, 'success');
    await page.locator('.level[data-level="user"]').waitFor();
    assert.equal((await stored(page)).legacyid, user.legacyid);
    // The icon the link names is served.
    assert.equal((await fetch(link.searchParams.get('icon')!)).status, 200);
    await page.close();
  });

  it('log out of this session ends it on the node; log out everywhere ends every session of the id', async () => {
    const { page, phrase } = await loginPage();
    await page.getByLabel('Your address (legacyid)').fill(operator.legacyid);
    await page.getByLabel('Signature of the phrase').fill(operator.sign(phrase));
    await page.getByRole('button', { name: 'Log in with signature' }).click();
    await page.locator('.level[data-level="admin"]').waitFor();
    const first = (await stored(page)).header;
    await page.getByRole('button', { name: 'Log out', exact: true }).click();
    await page.getByRole('link', { name: 'Log in' }).waitFor();
    assert.equal((await node.get('/id/loggedsessions', { legacyidauth: first })).json.data.code, 401);

    // Two sessions of the operator (another device's, made over HTTP), then log out everywhere from the page.
    const phrase2 = (await node.get('/id/loginphrase')).json.data;
    const other = authHeader(operator.legacyid, operator.sign(phrase2), phrase2);
    assert.equal((await node.post('/id/verifylogin', { legacyid: operator.legacyid, loginPhrase: phrase2, signature: operator.sign(phrase2) })).json.status, 'success');
    await page.goto(`${node.url}/#/login`);
    const phrase3 = await page.locator('#login-phrase').inputValue();
    await page.getByLabel('Your address (legacyid)').fill(operator.legacyid);
    await page.getByLabel('Signature of the phrase').fill(operator.sign(phrase3));
    await page.getByRole('button', { name: 'Log in with signature' }).click();
    await page.locator('.level[data-level="admin"]').waitFor();
    await page.getByRole('button', { name: 'Log out everywhere' }).click();
    await page.getByRole('link', { name: 'Log in' }).waitFor();
    assert.equal((await node.get('/id/loggedsessions', { legacyidauth: other })).json.data.code, 401);
    await page.close();
  });
});
