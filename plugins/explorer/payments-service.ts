/**
 * The narrow service other plugins read scanned payments through (`explorer-payments`): the scanned tip
 * and the transactions of one address from the index, so nothing else scans the chain again. After a
 * reorganisation the undone blocks' transactions are no longer listed.
 */
import type { ExplorerStore, Tip, TxRef } from './store.ts';

export interface ExplorerPayments {
  /** The highest block the explorer has applied, with its hash; null before the first. An address's list changes only when this does. */
  tip(): Tip | null;
  /** Transactions touching `address` in scanned blocks, newest first. */
  transactions(address: string): Promise<TxRef[]>;
}

export function paymentsService(store: ExplorerStore): ExplorerPayments {
  return {
    tip: () => store.tip(),
    transactions: (address) => store.transactions(address),
  };
}
