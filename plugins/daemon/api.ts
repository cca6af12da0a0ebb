/**
 * The daemon plugin's public contract: the typed service ref other plugins name in their `deps`
 * (`deps: { daemon: daemonService }`), and the types of what they receive.
 */
import { createServiceRef } from '../../core/plugin-api.ts';
import type { DaemonService } from './service.ts';

export type { CallOptions, DaemonService } from './service.ts';
export { RpcError, type RpcClient } from '../../lib/daemon-rpc/rpc.ts';

export const daemonService = createServiceRef<DaemonService>('daemon');
