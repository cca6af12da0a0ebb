/**
 * The explorer's storage contract. Narrow on purpose: the scanner and the routes use only this, so a
 * networked database (one transaction per block) can replace the embedded nedb implementation for a full
 * mainnet index without touching them.
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

export interface ExplorerStore {
  /** Load and finish or undo a block that a crash left half-applied; returns the scanned tip. */
  open(): Promise<Tip | null>;
  /** The last block applied as a whole (null: nothing indexed). */
  tip(): Tip | null;
  /** The hash this index holds for `height`, for the fork search; null when no longer known. */
  hashAt(height: number): string | null;
  /** The lowest height the index can be rolled back to exactly (undo records are kept for a bounded depth). */
  lowestUndoTarget(): number | null;
  /**
   * Apply consecutive blocks on top of the tip, atomically with the tip: after a crash the index holds
   * either none of them or all of them (a batch saves per-write overhead while catching up).
   */
  applyBlocks(blocks: ParsedBlock[]): Promise<void>;
  /** Undo the tip block exactly: its outputs removed, the outputs it spent restored. */
  undoTip(): Promise<void>;
  /** Forget everything (reindex). */
  drop(): Promise<void>;
  utxos(address: string): Promise<Utxo[]>;
  /** Newest first. */
  transactions(address: string): Promise<TxRef[]>;
  /** Sum of the address's unspent outputs, in the smallest unit. */
  balance(address: string): Promise<bigint>;
}

/** The stored index contradicts itself (found at open); the scanner rebuilds it. */
export class IndexInconsistentError extends Error {}
