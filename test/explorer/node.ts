/** A node serving the identity, daemon and explorer plugins, pointed at a real litecoind; and HTTP helpers. */
import { eventually } from '../support/wait.ts';
import assert from 'node:assert/strict';
import { manifestsFor, startNode, type Answer, type StartOptions, type TestNode } from '../support/node.ts';
import type { Regtest } from '../support/litecoind.ts';
import type { IndexReader } from './support.ts';
import { ok as data, refused as error } from '../support/envelope.ts';

export { data, error };

/** The manifests of an explorer node (so work in progress in other plugins cannot break these tests). */
export const explorerManifests = () => manifestsFor(['identity', 'daemon', 'explorer']);

/** Node config for a regtest daemon, as an operator would write it. */
export function explorerConfig(ltc: Regtest, explorer: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    daemon: { rpc: { url: ltc.url, user: ltc.user, password: ltc.password } },
    explorer: { pollIntervalMs: 50, retryIntervalMs: 100, prefetch: 8, ...explorer },
    ...extra,
  };
}

export async function startExplorerNode(ltc: Regtest, explorer: Record<string, unknown> = {}, opts: StartOptions & { extra?: Record<string, unknown> } = {}): Promise<TestNode> {
  return startNode({ plugins: ['identity', 'daemon', 'explorer'], ...opts, config: { ...explorerConfig(ltc, explorer, opts.extra), ...opts.config } });
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

/** Poll until `cond` holds, at most `tries` times 25 ms (test/support/wait.ts). */
export const until = (cond: () => Promise<boolean>, tries = 800): Promise<true> => eventually(cond, { what: 'the condition', timeoutMs: tries * 25, everyMs: 25 });

/** Wait until the node's index reached the daemon's tip (read through the public route). */
export async function synced(node: { get(p: string): Promise<Answer> }, ltc: Regtest): Promise<number> {
  let tip = -1;
  await until(async () => {
    tip = await ltc.rpc.call<number>('getblockcount');
    const a = await node.get('/explorer/scannedheight');
    return a.json?.status === 'success' && a.json.data.generalScannedHeight === tip;
    // Indexing ~1,800 regtest blocks from a restart took 20 s at load 20 on 2 cores (a CI failure at 800
    // tries): the deadline is for a node that stopped indexing, not for a slow machine.
  }, 4800);
  return tip;
}
