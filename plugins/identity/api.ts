/**
 * The identity plugin's public contract: the typed service ref other plugins name in their `deps`
 * (`deps: { identity: identityService }`): wallet signature checks and the app-owner records.
 */
import { createServiceRef } from '../../core/plugin-api.ts';
import type { AppOwners } from './appowners.ts';

export interface IdentityService {
  /** Whether `signature` signs `message` for the wallet `legacyid` (bitcoin-style or ethereum). */
  verifySignature(message: string, legacyid: string, signature: string): boolean;
  appOwners: Pick<AppOwners, 'get' | 'set' | 'remove'>;
}

export const identityService = createServiceRef<IdentityService>('identity');
