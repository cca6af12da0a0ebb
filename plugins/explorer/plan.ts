/**
 * What a run of blocks does to the index, worked out before anything is written (the same for every store):
 * the outputs it removes, the outputs it leaves unspent, the transaction entries it adds, and one undo
 * record per block. Outputs created and spent inside the run never reach the store; a spend of an output the
 * index never held (before the start height, or paying no address) is not tracked.
 */
import type { ParsedBlock, Utxo } from './store.ts';

/** An output's key: `txid:vout`. */
export type OutPoint = { txid: string; vout: number };
export const outKey = (o: OutPoint) => `${o.txid}:${o.vout}`;

/** One transaction entry: `txid` pays or spends from `address` in block `height`. */
export interface TxEntry {
  address: string;
  txid: string;
  height: number;
}

/** What one block did, enough to take it back exactly. */
export interface BlockUndo {
  height: number;
  hash: string;
  prev: string;
  /** Outputs the block created and did not spend itself (removed on undo). */
  outputs: OutPoint[];
  /** Transaction entries the block added (removed on undo). */
  txs: { address: string; txid: string }[];
  /** Outputs the block spent, as they were (put back on undo). */
  spent: Utxo[];
}

export interface Run {
  undo: BlockUndo[];
  /** Outputs held before the run that it spends. */
  removed: Utxo[];
  /** Outputs the run creates and leaves unspent. */
  created: Utxo[];
  txs: TxEntry[];
  /** Change of each touched address's balance (created minus removed), for the running balance per address. */
  balances: Map<string, bigint>;
}

/** Txids and scripts are stored as bytes. */
export const hex = (s: string) => Buffer.from(s, 'hex');

/** Sum amounts per address, `sign` +1 (outputs added) or -1 (outputs removed), into `into`. */
export function addBalances(into: Map<string, bigint>, outputs: Iterable<{ address: string; satoshis: number | bigint | string }>, sign: 1 | -1): Map<string, bigint> {
  for (const o of outputs) into.set(o.address, (into.get(o.address) ?? 0n) + BigInt(o.satoshis) * BigInt(sign));
  return into;
}

/** Check that `blocks` extend `tip` one by one; throws otherwise. */
export function assertExtends(tip: { height: number; hash: string } | null, blocks: ParsedBlock[]): void {
  let prev = tip;
  for (const b of blocks) {
    if (prev && (b.height !== prev.height + 1 || b.prev !== prev.hash)) throw new Error(`block ${b.height} (${b.hash}) does not extend ${prev.height} (${prev.hash})`);
    prev = { height: b.height, hash: b.hash };
  }
}

/**
 * Plan a run. `lookup` answers, in one call, which of the given outputs the store holds (it may return them
 * in any order and leave out the unknown ones).
 */
export async function planRun(blocks: ParsedBlock[], lookup: (keys: OutPoint[]) => Utxo[] | Promise<Utxo[]>): Promise<Run> {
  const p = collect(blocks);
  return finish(p, p.outside.length ? await lookup(p.outside.map((x) => x.key)) : []);
}

/** The same with a synchronous lookup (SQLite: inside the run's transaction, which cannot await). */
export function planRunSync(blocks: ParsedBlock[], lookup: (keys: OutPoint[]) => Utxo[]): Run {
  const p = collect(blocks);
  return finish(p, p.outside.length ? lookup(p.outside.map((x) => x.key)) : []);
}

type Collected = ReturnType<typeof collect>;

/** What the run's own blocks say, before the outputs of earlier runs that it spends are known. */
function collect(blocks: ParsedBlock[]) {
  const created = new Map<string, Utxo>();
  const undo: BlockUndo[] = [];
  const entries: Map<string, TxEntry>[] = [];
  const adds: Set<string>[] = [];
  const outside: { key: OutPoint; txid: string; block: number }[] = [];
  blocks.forEach((b, i) => {
    const txs = new Map<string, TxEntry>();
    const entry = (address: string, txid: string) => {
      const k = `${address} ${txid}`;
      if (!txs.has(k)) txs.set(k, { address, txid, height: b.height });
    };
    const added = new Set<string>();
    const spent: Utxo[] = [];
    for (const o of b.outputs) {
      const k = outKey(o);
      created.set(k, o);
      added.add(k);
      entry(o.address, o.txid);
    }
    for (const s of b.spends) {
      const key = { txid: s.prevTxid, vout: s.prevVout };
      const k = outKey(key);
      const own = created.get(k);
      if (!own) {
        outside.push({ key, txid: s.txid, block: i });
        continue;
      }
      created.delete(k);
      // Created and spent in the same block: never unspent there, but both transactions touch the address.
      if (!added.delete(k)) spent.push(own);
      entry(own.address, s.txid);
    }
    undo.push({ height: b.height, hash: b.hash, prev: b.prev, outputs: [], txs: [], spent });
    entries.push(txs);
    adds.push(added);
  });
  return { created, undo, entries, adds, outside };
}

/** The plan, given the outputs of earlier runs (`found`: those of `p.outside` the store holds). */
function finish({ created, undo, entries, adds, outside }: Collected, found: Utxo[]): Run {
  const removed: Utxo[] = [];
  if (outside.length) {
    const held = new Map(found.map((u) => [outKey(u), u]));
    for (const x of outside) {
      const u = held.get(outKey(x.key));
      if (!u) continue;
      // The same output spent twice in a run cannot happen on a valid chain; count it once anyway.
      held.delete(outKey(x.key));
      removed.push(u);
      undo[x.block].spent.push(u);
      const k = `${u.address} ${x.txid}`;
      if (!entries[x.block].has(k)) entries[x.block].set(k, { address: u.address, txid: x.txid, height: undo[x.block].height });
    }
  }
  const txs: TxEntry[] = [];
  undo.forEach((u, i) => {
    // Every output the block left unspent, even one a later block of the run spends: that block's undo puts
    // it back, and this block's undo removes it again.
    for (const k of adds[i]) {
      const [txid, vout] = k.split(':');
      u.outputs.push({ txid, vout: Number(vout) });
    }
    for (const e of entries[i].values()) {
      u.txs.push({ address: e.address, txid: e.txid });
      txs.push(e);
    }
  });
  const kept = [...created.values()];
  const balances = addBalances(addBalances(new Map(), kept, 1), removed, -1);
  // An address whose outputs came and went within the run: nothing to write.
  for (const [a, d] of balances) if (d === 0n) balances.delete(a);
  return { undo, removed, created: kept, txs, balances };
}

/** Undo records are stored as JSON text (outputs and scripts as they are; amounts are safe integers). */
export const packUndo = (u: BlockUndo) => JSON.stringify({ o: u.outputs.map((o) => [o.txid, o.vout]), t: u.txs.map((t) => [t.address, t.txid]), s: u.spent });
export function unpackUndo(height: number, hash: string, prev: string, text: string): BlockUndo {
  const j = JSON.parse(text) as { o: [string, number][]; t: [string, string][]; s: Utxo[] };
  return { height, hash, prev, outputs: j.o.map(([txid, vout]) => ({ txid, vout })), txs: j.t.map(([address, txid]) => ({ address, txid })), spent: j.s };
}
