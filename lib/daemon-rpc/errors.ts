/** Daemon failures as envelope errors: the daemon's own code and message, or one clear transport error. */
import { ApiError } from '../../core/plugin-api.ts';
import { RpcError } from './rpc.ts';

/** Names for the daemons' standard JSON-RPC error codes (bitcoind's rpc/protocol.h, shared by its forks). */
export const RPC_ERROR_NAMES: Readonly<Record<number, string>> = Object.freeze({
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
});

/**
 * `prefix` names the transport errors: 'Daemon' -> DaemonUnreachable, DaemonBusy, DaemonTimeout,
 * DaemonProtocolError, DaemonError; 'Benchmark' -> BenchmarkUnreachable, ... `what` is the daemon in words.
 */
export function toApiError(e: unknown, prefix = 'Daemon', what = 'daemon'): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof RpcError) {
    if (e.kind === 'rpc') {
      const code = typeof e.code === 'number' ? e.code : 500;
      return new ApiError(code, RPC_ERROR_NAMES[code] ?? `${prefix}Error`, e.message);
    }
    if (e.kind === 'unreachable') return new ApiError(503, `${prefix}Unreachable`, e.message);
    if (e.kind === 'timeout') return e.code === 'EBUSY' ? new ApiError(503, `${prefix}Busy`, e.message) : new ApiError(504, `${prefix}Timeout`, e.message);
    return new ApiError(502, `${prefix}ProtocolError`, e.message);
  }
  return new ApiError(500, `${prefix}Error`, `The ${what} call failed: ${(e as Error)?.message ?? String(e)}`);
}
