/**
 * A node serving the host, core, identity, daemon and explorer manifests (copied to a temp folder, so work
 * in progress in other plugins cannot break these tests), pointed at a real litecoind; and HTTP helpers.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { startNode, tempDir, type Answer, type StartOptions, type TestNode } from '../support/node.ts';
import type { Regtest } from '../support/litecoind.ts';
import type { IndexReader } from './support.ts';

export const MANIFESTS = ['host', 'node', 'identity', 'daemon', 'explorer'];

export function explorerManifests(): string {
  const dir = tempDir('corenode-explorer-manifests-');
  for (const m of MANIFESTS) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${m}.yaml`), path.join(dir, `${m}.yaml`));
  return dir;
}

/** Node config for a regtest daemon, as an operator would write it. */
export function explorerConfig(ltc: Regtest, explorer: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password } },
    explorer: { pollIntervalMs: 50, retryIntervalMs: 100, prefetch: 8, ...explorer },
    ...extra,
  };
}

export async function startExplorerNode(ltc: Regtest, explorer: Record<string, unknown> = {}, opts: StartOptions & { extra?: Record<string, unknown> } = {}): Promise<TestNode> {
  const manifestsDir = explorerManifests();
  const node = await startNode({ ...opts, manifestsDir, config: { ...explorerConfig(ltc, explorer, opts.extra), ...opts.config } });
  const close = node.close;
  node.close = async (o) => {
    await close(o);
    fs.rmSync(manifestsDir, { recursive: true, force: true });
  };
  return node;
}

export function data(a: Answer): any {
  assert.equal(a.status, 200, a.text);
  assert.equal(a.json?.status, 'success', a.text);
  return a.json.data;
}

export function error(a: Answer): { code: number | string; name: string; message: string } {
  assert.equal(a.status, 200, a.text);
  assert.equal(a.json?.status, 'error', a.text);
  return a.json.data;
}

/** The index as the public routes answer it, every page of it (following X-Explorer-Next-Cursor). */
export function httpReader(node: { get(p: string): Promise<Answer> }, form: 'query' | 'path' = 'query'): IndexReader {
  const url = (route: string, a: string) => (form === 'query' ? `/explorer/${route}?address=${encodeURIComponent(a)}` : `/explorer/${route}/${encodeURIComponent(a)}`);
  async function all(route: 'utxo' | 'transactions', a: string): Promise<any[]> {
    const out: any[] = [];
    let cursor: string | null = null;
    for (let pages = 0; ; pages++) {
      assert.ok(pages < 100_000, 'paging ends');
      const base = url(route, a);
      const answer = await node.get(cursor ? `${base}${base.includes('?') ? '&' : '?'}cursor=${cursor}` : base);
      const d = data(answer);
      if (route === 'transactions') assert.equal(d.address, a);
      out.push(...(route === 'transactions' ? d.transactions : d));
      cursor = answer.headers.get('x-explorer-next-cursor');
      if (route === 'transactions') assert.equal(d.next, cursor ?? undefined, 'the next cursor is in the answer too');
      if (!cursor) return out;
    }
  }
  return {
    utxos: (a) => all('utxo', a),
    balance: async (a) => data(await node.get(url('balance', a))),
    transactions: (a) => all('transactions', a),
  };
}

/** Poll until `cond` holds (bounded by count, not by time). */
export async function until(cond: () => Promise<boolean>, tries = 800): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  assert.fail('condition never held');
}

/** Wait until the node's index reached the daemon's tip (read through the public route). */
export async function synced(node: { get(p: string): Promise<Answer> }, ltc: Regtest): Promise<number> {
  let tip = -1;
  await until(async () => {
    tip = await ltc.rpc.call<number>('getblockcount');
    const a = await node.get('/explorer/scannedheight');
    return a.json?.status === 'success' && a.json.data.generalScannedHeight === tip;
  });
  return tip;
}
