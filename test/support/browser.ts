/**
 * Debian's chromium driven by playwright-core for the web interface's tests (never a downloaded browser):
 * headless, a fresh profile folder removed at close (and at the test process's exit when a test failed
 * midway), no network of its own (no component updates, sync, QUIC). `page()` opens a page whose console
 * errors and failed requests are collected, so a test can assert the page ran clean.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { atExit } from './at-exit.ts';

export const CHROMIUM = process.env.CORENODE_CHROMIUM ?? '/usr/bin/chromium';

export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface TestBrowser {
  context: BrowserContext;
  /** A new page at this size (desktop 1280x800 by default), with its console errors collected. */
  page(viewport?: { width: number; height: number }): Promise<TestPage>;
  close(): Promise<void>;
}

export interface TestPage {
  page: Page;
  /** Console errors and uncaught exceptions of the page so far. */
  errors: string[];
}

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

export async function launchBrowser(): Promise<TestBrowser> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'corenode-chromium-'));
  let pid: number | undefined;
  const forget = atExit(() => {
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    fs.rmSync(profile, { recursive: true, force: true });
  });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: DESKTOP,
  });
  pid = (context.browser() as unknown as { process?: () => { pid?: number } } | null)?.process?.()?.pid;
  // The persistent context opens one blank page; tests open their own.
  for (const p of context.pages()) await p.close();
  return {
    context,
    async page(viewport = DESKTOP) {
      const page = await context.newPage();
      await page.setViewportSize(viewport);
      const errors: string[] = [];
      page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
      page.on('pageerror', (e) => errors.push(e.message));
      return { page, errors };
    },
    async close() {
      await context.close().catch(() => undefined);
      fs.rmSync(profile, { recursive: true, force: true });
      forget();
    },
  };
}

/** Where the tests write screenshots for a reviewer (git-ignored; plugins/ui/README.md names it). */
export const ARTIFACTS = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../test-artifacts/ui');

export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

const AXE = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../node_modules/axe-core/axe.min.js');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: unknown[] }[];
}

/**
 * axe-core run inside the page (injected as a script: the page's own policy does not apply to what the
 * test evaluates); answers the violations of impact serious or critical.
 */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(fs.readFileSync(AXE, 'utf8'));
  const res = (await page.evaluate(() => (window as any).axe.run(document, { resultTypes: ['violations'] }))) as { violations: AxeViolation[] };
  return res.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
