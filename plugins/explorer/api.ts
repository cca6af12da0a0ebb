/**
 * The explorer plugin's public contract: the typed service ref other plugins name in their `deps`
 * (`deps: { payments: explorerPayments }`), and its types.
 */
import { createServiceRef } from '../../core/plugin-api.ts';
import type { ExplorerPayments } from './payments-service.ts';

export type { ExplorerPayments } from './payments-service.ts';

export const explorerPayments = createServiceRef<ExplorerPayments>('explorer-payments');
