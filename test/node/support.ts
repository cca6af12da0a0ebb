/**
 * Set-up shared by the node plugin's tests: a node serving the host, node (and optionally daemon) manifests
 * plus the TEST-ONLY session double, with temp folders under /tmp/nodeops-*.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_CORE_TEAM, REPO_ROOT } from '../../core/config.ts';
import { startNode, type StartOptions, type TestNode } from '../support/node.ts';

export const OPERATOR = '1CoreNodeOperatorTestIdxxxxxxxxxx';
export const MEMBER = '1CoreNodeUserTestIdxxxxxxxxxxxxxx';
export const CORE_TEAM = DEFAULT_CORE_TEAM[0];

export function tmp(name: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `nodeops-${name}-`));
}

export function authAs(legacyid: string): Record<string, string> {
  const q = new URLSearchParams({ legacyid, signature: 'session-double-signature', loginPhrase: `double-${legacyid}-phrase-of-forty-characters-at-least` });
  return { legacyidauth: q.toString() };
}
export const asOperator = () => authAs(OPERATOR);

export interface OpsOptions extends StartOptions {
  node?: Record<string, unknown>;
  daemon?: Record<string, unknown>;
  /** Serve the daemon plugin too (its service and control). */
  withDaemon?: boolean;
  /** TEST-ONLY plugins of test/node/fixtures to serve too (`<name>.yaml` and `<name>/`), besides the session double. */
  fixtures?: string[];
}

export async function startOpsNode(opts: OpsOptions = {}): Promise<TestNode & { root: string }> {
  const root = tmp('node');
  const manifestsDir = path.join(root, 'manifests');
  const pluginsDir = path.join(root, 'plugins');
  fs.mkdirSync(manifestsDir);
  fs.mkdirSync(pluginsDir);
  const plugins = ['node', ...(opts.withDaemon ? ['daemon'] : [])];
  for (const n of ['host', ...plugins]) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${n}.yaml`), path.join(manifestsDir, `${n}.yaml`));
  for (const n of plugins) fs.symlinkSync(path.join(REPO_ROOT, 'plugins', n), path.join(pluginsDir, n));
  const fixtures = path.join(REPO_ROOT, 'test/node/fixtures');
  for (const f of ['sessions', ...(opts.fixtures ?? [])]) {
    fs.copyFileSync(path.join(fixtures, `${f}.yaml`), path.join(manifestsDir, `${f}.yaml`));
    fs.symlinkSync(path.join(fixtures, f), path.join(pluginsDir, f));
  }
  const started = startNode({
    ...opts,
    dataDir: opts.dataDir ?? path.join(root, 'data'),
    manifestsDir,
    config: {
      pluginsDir,
      initial: { legacyid: OPERATOR },
      // Harmless commands unless a test names its own: no test may run the production defaults (apt-get).
      node: {
        softwareDir: path.join(root, 'no-software'),
        restartCommand: ['true'],
        daemon: { updateCommand: ['true'] },
        benchmark: { rpc: { url: 'http://127.0.0.1:1/' }, startCommand: ['false'], updateCommand: ['true'], startWaitMs: 0, stopWaitMs: 0 },
        firewall: { tool: 'none' },
        ...opts.node,
      },
      ...(opts.withDaemon ? { daemon: opts.daemon ?? {} } : {}),
      ...opts.config,
    },
  });
  // A node that failed to start may still write to its stores for a moment: its folder stays (the test fails).
  const node = await started;
  const close = node.close;
  return Object.assign(node, {
    root,
    close: async (o?: { keepData?: boolean }) => {
      await close(o);
      // root holds the data only when the test named no data folder of its own.
      if (!o?.keepData || opts.dataDir) fs.rmSync(root, { recursive: true, force: true });
    },
  });
}

export function ok(answer: { status: number; json: any; text: string }): any {
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.json?.status, 'success', answer.text);
  return answer.json.data;
}

export function err(answer: { status: number; json: any; text: string }): { code: number | string; name: string; message: string } {
  assert.equal(answer.json?.status, 'error', answer.text);
  return answer.json.data;
}

/** Poll until `fn` returns a truthy value or the deadline passes. */
export async function waitFor<T>(fn: () => Promise<T> | T, ms = 30_000, what = 'condition'): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
