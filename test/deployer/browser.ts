/**
 * Debian's chromium (/usr/bin/chromium, scripts/setup/ensure-chromium.sh) driven by playwright-core, for the
 * deployer page's tests: never a downloaded browser, a fresh profile folder removed at close, and axe-core
 * run inside the page.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { REPO_ROOT } from '../../core/config.ts';

const require = createRequire(import.meta.url);
export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Where the tests write their screenshots (git-ignored; the deployer README names it). */
export const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts', 'ui');

export interface TestBrowser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<TestBrowser> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'deployer-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: FLAGS, viewport: { width: 1280, height: 800 } });
    return {
      context,
      async close() {
        await context.close().catch(() => {});
        fs.rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (e) {
    fs.rmSync(profile, { recursive: true, force: true });
    throw e;
  }
}

/**
 * Violations of impact serious or critical, as `rule: targets` lines. axe's source is evaluated through the
 * DevTools protocol, which the page's CSP (scripts from the service only) does not govern.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  const axe = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(`${axe}\n;0`);
  const result: any = await page.evaluate('axe.run(document, { resultTypes: ["violations"] })');
  return result.violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id} (${v.impact}): ${v.nodes.map((n: any) => n.target.join(' ')).join(', ')}`);
}

/**
 * Screenshots at desktop (1280x800) and phone (390x844) width, full page, as `<name>-desktop.png` / `-phone.png`;
 * throws when the page is wider than the screen.
 */
export async function screenshots(page: Page, name: string): Promise<void> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const before = page.viewportSize();
  for (const [label, size] of [['desktop', { width: 1280, height: 800 }], ['phone', { width: 390, height: 844 }]] as const) {
    await page.setViewportSize(size);
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${label}.png`), fullPage: true });
    // Usable at that width: nothing makes the page itself scroll sideways (a wide table scrolls in its own box).
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > size.width) throw new Error(`${name} at ${label} width: the page is ${width} px wide, wider than ${size.width}`);
  }
  if (before) await page.setViewportSize(before);
}
