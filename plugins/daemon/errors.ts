/** Daemon failures as envelope errors: the daemon's own code and message, or one clear transport error. */
import { ApiError } from '../../core/plugin-api.ts';
import { RpcError } from '../../lib/daemon-rpc/rpc.ts';

/** Names for the daemons' standard JSON-RPC error codes (bitcoind's rpc/protocol.h, shared by its forks). */
const RPC_NAMES: Record<number, string> = {
  [-32600]: 'InvalidRequest',
  [-32601]: 'MethodNotFound',
  [-32602]: 'InvalidParams',
  [-32603]: 'InternalError',
  [-32700]: 'ParseError',
  [-1]: 'MiscError',
  [-3]: 'TypeError',
  [-5]: 'InvalidAddressOrKey',
  [-7]: 'OutOfMemory',
  [-8]: 'InvalidParameter',
  [-9]: 'ClientNotConnected',
  [-10]: 'ClientInInitialDownload',
  [-20]: 'DatabaseError',
  [-22]: 'DeserializationError',
  [-23]: 'ClientNodeAlreadyAdded',
  [-24]: 'ClientNodeNotAdded',
  [-25]: 'VerifyError',
  [-26]: 'VerifyRejected',
  [-27]: 'AlreadyInChain',
  [-28]: 'InWarmup',
  [-29]: 'ClientNodeNotConnected',
  [-30]: 'ClientInvalidIpOrSubnet',
  [-31]: 'ClientP2PDisabled',
  [-32]: 'MethodDeprecated',
};

export function toApiError(e: unknown, what = 'daemon'): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof RpcError) {
    if (e.kind === 'rpc') {
      const code = typeof e.code === 'number' ? e.code : 500;
      return new ApiError(code, RPC_NAMES[code] ?? 'DaemonError', e.message);
    }
    if (e.kind === 'unreachable') return new ApiError(503, what === 'daemon' ? 'DaemonUnreachable' : 'BenchmarkUnreachable', e.message);
    if (e.kind === 'timeout')
      return e.code === 'EBUSY' ? new ApiError(503, 'DaemonBusy', e.message) : new ApiError(504, 'DaemonTimeout', e.message);
    return new ApiError(502, 'DaemonProtocolError', e.message);
  }
  return new ApiError(500, 'DaemonError', `The ${what} call failed: ${(e as Error)?.message ?? String(e)}`);
}
