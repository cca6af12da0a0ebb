/**
 * The explorer's storage contract. Narrow on purpose: the scanner and the routes use only this, so the
 * embedded SQLite store (`sqlite-store.ts`, the default) and the PostgreSQL store (`pg-store.ts`) are
 * interchangeable, and the same tests run against both.
 */

/** An unspent output paying an address. Amounts are integers in the smallest unit. */
export interface Utxo {
  txid: string;
  vout: number;
  address: string;
  satoshis: number;
  height: number;
  scriptPubKey: string;
  coinbase: boolean;
}

/** A transaction that pays or spends from an address. */
export interface TxRef {
  txid: string;
  height: number;
}

/** A spend found in a block: transaction `txid` consumes output `prevTxid:prevVout`. */
export interface Spend {
  txid: string;
  prevTxid: string;
  prevVout: number;
}

/** What a block contributes, in block order; the store resolves the spends against what it holds. */
export interface ParsedBlock {
  height: number;
  hash: string;
  /** Hash of the block below; the scanned tip after this block is undone. */
  prev: string;
  /** Outputs that pay an address (outputs without one cannot be asked for and are left out). */
  outputs: Utxo[];
  spends: Spend[];
  /** Transactions in the block (for the block's own bookkeeping and counts). */
  txCount: number;
}

export interface Tip {
  height: number;
  hash: string;
}

/** Where a page of an address's list starts: after this entry (in the list's order), then `offset` more skipped. */
export interface Page<C> {
  limit: number;
  offset?: number;
  after?: C;
}
/** The last unspent output of a page (outputs are listed oldest first: height, txid, vout). */
export type UtxoCursor = Pick<Utxo, 'height' | 'txid' | 'vout'>;
/** The last transaction of a page (listed newest first: height descending, then txid). */
export type TxCursor = TxRef;

/** A write step, for the crash tests: each store checks its `fault` after it, inside the run's transaction. */
export type WriteStep = 'journal' | 'spent' | 'added' | 'tip' | 'undo-marked' | 'reverted';

/**
 * A simulated crash, for the tests. Data rather than a function, so it can cross to the SQLite writer
 * thread: the `nth` time (default 1) a write reaches `step`, it fails there, inside its transaction.
 * `throw` (default): an error, as from a full disk; `die` (SQLite only): the writer thread dies of an
 * uncaught error there, as from a bug.
 */
export interface Fault {
  step: WriteStep;
  nth?: number;
  how?: 'throw' | 'die';
}

/** An uncaught error of the writer thread (Fault `die`): not caught by its message loop. */
export class SimulatedDeath extends Error {}

/** The check a store runs after each write step: throws where `fault` says (never without one). */
export function faultHook(fault: Fault | undefined): (step: WriteStep) => void {
  if (!fault) return () => {};
  let seen = 0;
  return (step) => {
    if (step !== fault.step || ++seen !== (fault.nth ?? 1)) return;
    const msg = `simulated crash after ${step}`;
    throw fault.how === 'die' ? new SimulatedDeath(msg) : new Error(msg);
  };
}

export interface ExplorerStore {
  /**
   * Rows (outputs and spends, `blockRows`) the scanner may have handed to `applyBlocks` and not yet seen
   * written when it hands the next run (default 0: one run at a time). The store applies runs in order,
   * each on top of the one before, and fails the later ones when one fails; a store that commits the runs
   * queued behind a transaction as one (group commit) gets larger transactions the more may queue.
   */
  readonly rowsAhead?: number;
  /** Load and finish or undo a block that a crash left half-applied; returns the scanned tip. */
  open(): Promise<Tip | null>;
  /** The last block applied as a whole (null: nothing indexed). */
  tip(): Tip | null;
  /** The hash this index holds for `height`, for the fork search; null when no longer known. */
  hashAt(height: number): string | null;
  /** The lowest height the index can be rolled back to exactly (undo records are kept for a bounded depth). */
  lowestUndoTarget(): number | null;
  /**
   * Apply consecutive blocks on top of the tip, atomically with the tip: after a crash the index holds the
   * blocks up to its tip and none above, never part of a block (a batch saves per-write overhead while
   * catching up; a store may commit a long batch as several runs of whole blocks). `chainHeight`, the
   * daemon's height when they were fetched, spares undo records of blocks the chain is already the undo
   * depth past (journalFloor).
   */
  applyBlocks(blocks: ParsedBlock[], chainHeight?: number): Promise<void>;
  /** Undo the tip block exactly: its outputs removed, the outputs it spent restored. */
  undoTip(): Promise<void>;
  /** Forget everything (reindex). */
  drop(): Promise<void>;
  /** Oldest first (height, txid, vout); all of them without a page. */
  utxos(address: string, page?: Page<UtxoCursor>): Promise<Utxo[]>;
  /** Newest first (height descending, then txid); all of them without a page. */
  transactions(address: string, page?: Page<TxCursor>): Promise<TxRef[]>;
  /** Sum of the address's unspent outputs, in the smallest unit. */
  balance(address: string): Promise<bigint>;
  /** Release the file or the connections (the node stops; a test is done with this instance). */
  close(): Promise<void>;
}

/** What a block costs a store to write: its outputs and spends (the unit of `rowsAhead` and of a transaction's size). */
export const blockRows = (b: ParsedBlock) => b.outputs.length + b.spends.length;

/** The stored index contradicts itself (found at open); the scanner rebuilds it. */
export class IndexInconsistentError extends Error {}
