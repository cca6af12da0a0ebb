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

/**
 * Outputs by txid, then by vout. A `txid:vout` key is a new string to hash at every lookup; the txid strings
 * are the block's own and hash once (with string keys the plan was a quarter of the SQLite writer's CPU).
 */
class Outputs {
  private readonly byTxid = new Map<string, (Utxo | undefined)[]>();
  add(o: Utxo): void {
    const vouts = this.byTxid.get(o.txid);
    if (vouts) vouts[o.vout] = o;
    else {
      const fresh: (Utxo | undefined)[] = [];
      fresh[o.vout] = o;
      this.byTxid.set(o.txid, fresh);
    }
  }
  /** The output, removed; undefined when not held. */
  take(txid: string, vout: number): Utxo | undefined {
    const vouts = this.byTxid.get(txid);
    const o = vouts?.[vout];
    if (o) vouts![vout] = undefined;
    return o;
  }
  *values(): Generator<Utxo> {
    for (const vouts of this.byTxid.values()) for (const o of vouts) if (o) yield o;
  }
}

/** A block's transaction entries: addresses by txid (each pair once). */
class Entries {
  readonly byTxid = new Map<string, Set<string>>();
  add(address: string, txid: string): void {
    const addresses = this.byTxid.get(txid);
    if (addresses) addresses.add(address);
    else this.byTxid.set(txid, new Set([address]));
  }
}

/**
 * Amounts summed per address as numbers while the sum is a safe integer (a BigInt per output cost more than
 * the sums), exactly as BigInt past that (a chain whose supply exceeds 2^53 units).
 */
function addAmount(into: Map<string, number | bigint>, address: string, satoshis: number): void {
  const c = into.get(address);
  if (c === undefined) into.set(address, satoshis);
  else if (typeof c === 'number') {
    const s = c + satoshis;
    into.set(address, Number.isSafeInteger(s) ? s : BigInt(c) + BigInt(satoshis));
  } else into.set(address, c + BigInt(satoshis));
}

/** What the run's own blocks say, before the outputs of earlier runs that it spends are known. */
function collect(blocks: ParsedBlock[]) {
  const created = new Outputs();
  const undo: BlockUndo[] = [];
  const entries: Entries[] = [];
  /** Per block, the outputs it created (those it spent itself are left out in `finish`). */
  const adds: Utxo[][] = [];
  /** Outputs spent in the block that created them (rare): neither unspent there nor put back on undo. */
  const sameBlock = new Set<Utxo>();
  const outside: { key: OutPoint; txid: string; block: number }[] = [];
  for (let i = 0; i < blocks.length; i++) {
    const b = blocks[i];
    const txs = new Entries();
    const spent: Utxo[] = [];
    for (const o of b.outputs) {
      created.add(o);
      txs.add(o.address, o.txid);
    }
    for (const s of b.spends) {
      const own = created.take(s.prevTxid, s.prevVout);
      if (!own) {
        outside.push({ key: { txid: s.prevTxid, vout: s.prevVout }, txid: s.txid, block: i });
        continue;
      }
      // Created and spent in the same block: never unspent there, but both transactions touch the address.
      if (own.height === b.height) sameBlock.add(own);
      else spent.push(own);
      txs.add(own.address, s.txid);
    }
    undo.push({ height: b.height, hash: b.hash, prev: b.prev, outputs: [], txs: [], spent });
    entries.push(txs);
    adds.push(b.outputs);
  }
  return { created, undo, entries, adds, sameBlock, outside };
}

/** The plan, given the outputs of earlier runs (`found`: those of `p.outside` the store holds). */
function finish({ created, undo, entries, adds, sameBlock, outside }: Collected, found: Utxo[]): Run {
  const removed: Utxo[] = [];
  if (outside.length) {
    const held = new Outputs();
    for (const u of found) held.add(u);
    for (const x of outside) {
      // The same output spent twice in a run cannot happen on a valid chain; it is counted once anyway.
      const u = held.take(x.key.txid, x.key.vout);
      if (!u) continue;
      removed.push(u);
      undo[x.block].spent.push(u);
      entries[x.block].add(u.address, x.txid);
    }
  }
  const txs: TxEntry[] = [];
  undo.forEach((u, i) => {
    // Every output the block left unspent, even one a later block of the run spends: that block's undo puts
    // it back, and this block's undo removes it again.
    for (const o of adds[i]) if (!sameBlock.has(o)) u.outputs.push(o);
    for (const [txid, addresses] of entries[i].byTxid) {
      for (const address of addresses) {
        u.txs.push({ address, txid });
        txs.push({ address, txid, height: u.height });
      }
    }
  });
  const sums = new Map<string, number | bigint>();
  const kept: Utxo[] = [];
  for (const o of created.values()) {
    kept.push(o);
    addAmount(sums, o.address, o.satoshis);
  }
  for (const o of removed) addAmount(sums, o.address, -o.satoshis);
  const balances = new Map<string, bigint>();
  // An address whose outputs came and went within the run: nothing to write.
  for (const [a, d] of sums) if (d !== 0 && d !== 0n) balances.set(a, BigInt(d));
  return { undo, removed, created: kept, txs, balances };
}

/**
 * Undo records are text. Written as `2;txids;addresses;outputs;entries;spent`: each txid and address once, the
 * rest numbers pointing at them, fields split by `,` and parts by `.`, which txids, addresses, amounts and
 * script hex never hold (a record with one that does is written as version 1). A regtest block's record
 * was 5.4 KB of JSON (txids and addresses repeated, quoted), written and pruned again with every block and,
 * in PostgreSQL, escaped once more inside the run's array; this one is about 2.2 KB. Version 1, JSON
 * (`{o, t, s}`), is still read: an index written before keeps its undo records.
 */
export function packUndo(u: BlockUndo): string {
  const txids = new Map<string, number>();
  const addresses = new Map<string, number>();
  const ti = (t: string) => {
    let i = txids.get(t);
    if (i === undefined) txids.set(t, (i = txids.size));
    return i;
  };
  const ai = (a: string) => {
    let i = addresses.get(a);
    if (i === undefined) addresses.set(a, (i = addresses.size));
    return i;
  };
  const outputs = u.outputs.map((o) => `${ti(o.txid)}.${o.vout}`).join(',');
  const txs = u.txs.map((t) => `${ai(t.address)}.${ti(t.txid)}`).join(',');
  const spent = u.spent.map((o) => `${ti(o.txid)}.${o.vout}.${ai(o.address)}.${o.satoshis}.${o.height}.${o.coinbase ? 1 : 0}.${o.scriptPubKey}`).join(',');
  for (const x of txids.keys()) if (SEPARATOR.test(x)) return packUndoV1(u);
  for (const x of addresses.keys()) if (SEPARATOR.test(x)) return packUndoV1(u);
  for (const o of u.spent) if (SEPARATOR.test(o.scriptPubKey)) return packUndoV1(u);
  return `2;${[...txids.keys()].join(',')};${[...addresses.keys()].join(',')};${outputs};${txs};${spent}`;
}
const SEPARATOR = /[;,.]/;

const packUndoV1 = (u: BlockUndo) => JSON.stringify({ o: u.outputs.map((o) => [o.txid, o.vout]), t: u.txs.map((t) => [t.address, t.txid]), s: u.spent });

export function unpackUndo(height: number, hash: string, prev: string, text: string): BlockUndo {
  if (!text.startsWith('2;')) {
    const j = JSON.parse(text) as { o: [string, number][]; t: [string, string][]; s: Utxo[] };
    return { height, hash, prev, outputs: j.o.map(([txid, vout]) => ({ txid, vout })), txs: j.t.map(([address, txid]) => ({ address, txid })), spent: j.s };
  }
  const [, t, a, o, e, s] = text.split(';');
  const list = (f: string) => (f === '' ? [] : f.split(','));
  const txids = list(t);
  const addresses = list(a);
  const outputs = list(o).map((x) => {
    const [i, vout] = x.split('.');
    return { txid: txids[Number(i)], vout: Number(vout) };
  });
  const txs = list(e).map((x) => {
    const [i, j] = x.split('.');
    return { address: addresses[Number(i)], txid: txids[Number(j)] };
  });
  const spent = list(s).map((x): Utxo => {
    const [i, vout, j, satoshis, h, coinbase, scriptPubKey] = x.split('.');
    return { txid: txids[Number(i)], vout: Number(vout), address: addresses[Number(j)], satoshis: Number(satoshis), height: Number(h), coinbase: coinbase === '1', scriptPubKey };
  });
  return { height, hash, prev, outputs, txs, spent };
}
