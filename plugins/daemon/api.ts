/**
 * The daemon plugin's public contract: the typed service ref other plugins name in their `deps`
 * (`deps: { daemon: daemonService }`), and the types of what they receive.
 */
import { createServiceRef } from '../../core/plugin-api.ts';
import type { DaemonService } from './service.ts';

export type { CallOptions, DaemonService } from './service.ts';
export { RpcError, type RpcClient } from '../../lib/daemon-rpc/rpc.ts';

export const daemonService = createServiceRef<DaemonService>('daemon');

/** Start, restart and reindex of the daemon (one at a time), for the node's /core controls. */
export interface DaemonControl {
  start(): Promise<{ message: string }>;
  restart(): Promise<{ message: string }>;
  reindex(): Promise<{ message: string }>;
  /** Where the daemon's conf file is, and its network, as configured (to find its debug.log). */
  conf(): { confFile?: string; network?: 'main' | 'test' | 'regtest' };
}

export const daemonControlService = createServiceRef<DaemonControl>('daemon.control');
