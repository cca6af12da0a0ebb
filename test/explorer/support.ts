/**
 * Explorer test support: chain activity on a real litecoind (payments between wallet addresses, multi-output
 * payments, spends of unconfirmed change), and the check of an index against the daemon's own UTXO set
 * (`scantxoutset`) and against transaction lists recomputed from the raw blocks.
 */
import assert from 'node:assert/strict';
import { createRpcClient, type RpcClient, type RpcConnection } from '../../lib/daemon-rpc/rpc.ts';
import { coinsToSatoshis } from '../../plugins/explorer/amount.ts';
import { Scanner } from '../../plugins/explorer/scanner.ts';
import type { Regtest } from '../support/litecoind.ts';
import type { StoreKind, StoreOptions } from './stores.ts';

export const silent = { info() {}, warn() {}, error() {} };

/** What an index answers per address (the store itself, or the HTTP routes). */
export interface IndexReader {
  utxos(address: string): Promise<{ txid: string; vout: number; satoshis: number; height: number }[]>;
  balance(address: string): Promise<number | bigint>;
  transactions(address: string): Promise<{ txid: string; height: number }[]>;
}

export function rpcFor(ltc: Regtest): RpcConnection {
  return createRpcClient({ url: ltc.url, user: ltc.user, password: ltc.password, name: 'daemon' });
}

/** A store of `kind` over index `name` and a scanner (a new instance reads the same data again, as after a restart). */
export async function openIndex(ltc: Regtest, kind: StoreKind, name: string, opts: StoreOptions & { startHeight?: number; prefetch?: number; batchRows?: number; batchMs?: number; tailMinRows?: number } = {}) {
  const store = await kind.make(name, { undoDepth: opts.undoDepth, fault: opts.fault, rowsPerTransaction: opts.rowsPerTransaction });
  const scanner = new Scanner(rpcFor(ltc), store, { startHeight: opts.startHeight ?? 0, pollMs: 50, retryMs: 50, prefetch: opts.prefetch ?? 8, batchRows: opts.batchRows, batchMs: opts.batchMs, tailMinRows: opts.tailMinRows, log: silent });
  return { store, scanner };
}

/** Several wallet addresses of each kind. */
export async function walletAddresses(ltc: Regtest, n = 6): Promise<string[]> {
  const kinds = ['legacy', 'bech32', 'p2sh-segwit'];
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(await ltc.rpc.call<string>('getnewaddress', ['', kinds[i % kinds.length]]));
  return out;
}

const coins = (sats: number) => (sats / 1e8).toFixed(8);

/**
 * One round of activity, then one block mined to `minerTo`: a multi-output payment, a raw transaction that
 * spends its still unconfirmed change (created and spent in the same block) paying two addresses, and a
 * single payment (the wallet picks its coins, unconfirmed change included).
 */
export async function activity(ltc: Regtest, addrs: string[], round: number, minerTo = addrs[round % addrs.length]): Promise<void> {
  const rpc = ltc.rpc;
  const pick = (k: number) => addrs[(round * 5 + k) % addrs.length];
  const outs: Record<string, number> = {};
  for (let k = 0; k < 4; k++) outs[pick(k)] = Number((0.1 + ((round * 7 + k) % 13) * 0.0123457).toFixed(8));
  const multi = await rpc.call<string>('sendmany', ['', outs]);
  // Spend the multi-output payment's change before it confirms.
  const tx = await rpc.call<{ vout: { n: number; value: number; scriptPubKey: { addresses?: string[] } }[] }>('getrawtransaction', [multi, true]);
  const change = tx.vout.find((o) => !Object.keys(outs).includes(o.scriptPubKey.addresses?.[0] ?? ''));
  if (change) {
    const sats = coinsToSatoshis(change.value);
    const a = Math.floor(sats / 3);
    const b = sats - a - 20_000;
    if (b > 100_000) {
      const raw = await rpc.call<string>('createrawtransaction', [[{ txid: multi, vout: change.n }], [{ [pick(1)]: coins(a) }, { [pick(5)]: coins(b) }]]);
      const signed = await rpc.call<{ hex: string; complete: boolean }>('signrawtransactionwithwallet', [raw]);
      assert.ok(signed.complete);
      await rpc.call('sendrawtransaction', [signed.hex]);
    }
  }
  await rpc.call('sendtoaddress', [pick(4), 0.33333333]);
  await ltc.mine(1, minerTo);
}

interface RpcTx {
  txid: string;
  vin: { coinbase?: string; txid?: string; vout?: number }[];
  vout: { n: number; scriptPubKey: { addresses?: string[]; address?: string } }[];
}

/** What `chainView` reads of a block: per transaction its txid, the outputs it spends and the addresses it pays. */
type BlockView = { txid: string; ins: string[]; outs: [key: string, address: string][] }[];
/**
 * Blocks already read, by hash: a hash names one block's content for good, and the checks read the whole
 * chain again after every step (the scanner tests call them about 30 times on the same few hundred blocks).
 */
const blockViews = new Map<string, BlockView>();

async function blockView(rpc: RpcClient, hash: string): Promise<BlockView> {
  let view = blockViews.get(hash);
  if (!view) {
    const block = await rpc.call<{ tx: RpcTx[] }>('getblock', [hash, 2]);
    view = block.tx.map((tx) => ({
      txid: tx.txid,
      ins: tx.vin.filter((v) => v.coinbase === undefined).map((v) => `${v.txid}:${v.vout}`),
      outs: tx.vout.flatMap((o): [string, string][] => {
        const a = o.scriptPubKey.address ?? (o.scriptPubKey.addresses?.length === 1 ? o.scriptPubKey.addresses[0] : undefined);
        return a ? [[`${tx.txid}:${o.n}`, a]] : [];
      }),
    }));
    blockViews.set(hash, view);
  }
  return view;
}

/** Every address paid in blocks `from..tip`, and each address's transactions, recomputed from the raw blocks. */
export async function chainView(rpc: RpcClient, from = 0): Promise<{ tip: number; txsOf: Map<string, Set<string>> }> {
  const tip = await rpc.call<number>('getblockcount');
  const owner = new Map<string, string>();
  const txsOf = new Map<string, Set<string>>();
  const touch = (a: string, txid: string) => {
    if (!txsOf.has(a)) txsOf.set(a, new Set());
    txsOf.get(a)!.add(txid);
  };
  const heights: number[] = [];
  for (let h = Math.max(1, from); h <= tip; h++) heights.push(h);
  const hashes = await rpc.batch(heights.map((h) => ({ method: 'getblockhash', params: [h] })));
  for (const hash of hashes) {
    if (hash instanceof Error) throw hash;
    for (const tx of await blockView(rpc, hash as string)) {
      for (const k of tx.ins) {
        const a = owner.get(k);
        if (a) touch(a, tx.txid);
      }
      for (const [k, a] of tx.outs) {
        owner.set(k, a);
        touch(a, tx.txid);
      }
    }
  }
  return { tip, txsOf };
}

/**
 * Every address the chain has paid since `from`: its unspent outputs and balance in the index equal the
 * daemon's `scantxoutset`, and its transaction list equals the one recomputed from the blocks.
 */
export async function assertMatchesDaemon(rpc: RpcClient, index: IndexReader, from = 0): Promise<{ addresses: number; utxos: number }> {
  const { txsOf } = await chainView(rpc, from);
  const addresses = [...txsOf.keys()];
  const scan = await rpc.call<{ success: boolean; unspents: { txid: string; vout: number; desc: string; amount: number; height: number }[] }>(
    'scantxoutset',
    ['start', addresses.map((a) => `addr(${a})`)],
    { timeoutMs: 120_000 },
  );
  assert.ok(scan.success);
  const expected = new Map<string, string[]>(addresses.map((a) => [a, []]));
  for (const u of scan.unspents) {
    const a = /^addr\(([^)]+)\)/.exec(u.desc)![1];
    if (u.height < from) continue;
    expected.get(a)!.push(`${u.txid}:${u.vout}:${coinsToSatoshis(u.amount)}:${u.height}`);
  }
  let utxos = 0;
  for (const a of addresses) {
    const ours = (await index.utxos(a)).map((u) => `${u.txid}:${u.vout}:${u.satoshis}:${u.height}`).sort();
    assert.deepEqual(ours, expected.get(a)!.sort(), `unspent outputs of ${a}`);
    const sum = expected.get(a)!.reduce((s, x) => s + BigInt(x.split(':')[2]), 0n);
    assert.equal(BigInt(await index.balance(a)), sum, `balance of ${a}`);
    const txs = await index.transactions(a);
    assert.deepEqual(txs.map((t) => t.txid).sort(), [...txsOf.get(a)!].sort(), `transactions of ${a}`);
    assert.deepEqual(
      txs.map((t) => t.height),
      txs.map((t) => t.height).sort((x, y) => y - x),
      `transactions of ${a} newest first`,
    );
    utxos += ours.length;
  }
  return { addresses: addresses.length, utxos };
}
