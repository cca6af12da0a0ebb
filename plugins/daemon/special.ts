/**
 * Routes whose behaviour differs from a plain relay: wallet fields dropped (the node has no wallet), blocks
 * by height resolved to a hash first (so only blocks by hash are ever cached), the node list's `limit`.
 */
import type { HandlerInput } from '../../core/plugin-api.ts';
import { rpcParams, type RpcRoute } from './rpc-route.ts';

export type RouteCall = <T = unknown>(input: HandlerInput, name: string, params: unknown[], opts?: { cache?: boolean }) => Promise<T>;

/** Wallet fields of getinfo (spec: no wallet, so always dropped; facts §3.2). */
const WALLET_INFO = ['balance', 'walletversion', 'keypoololdest', 'keypoolsize', 'unlocked_until', 'paytxfee'];
/** Wallet fields of validateaddress, kept only for the operator (reference level public(admin:+ismine,iswatchonly)). */
const WALLET_ADDRESS = ['ismine', 'iswatchonly', 'account', 'pubkey', 'iscompressed', 'hdkeypath', 'hdmasterkeyid', 'hdseedid', 'label', 'labels'];

function without(value: unknown, keys: string[]): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  // A copy: the answer object may be shared (never mutate what a cache could hand out again).
  return Object.fromEntries(Object.entries(value).filter(([k]) => !keys.includes(k)));
}

export function specialHandlers(call: RouteCall) {
  const paramsOf = (input: HandlerInput) => rpcParams(input.route.meta as RpcRoute, input.values);
  return {
    getinfo: async (input: HandlerInput) => without(await call(input, 'getinfo', []), WALLET_INFO),

    validateaddress: async (input: HandlerInput) => {
      const out = await call(input, 'validateaddress', paramsOf(input));
      return input.caller.isAdmin ? out : without(out, WALLET_ADDRESS);
    },

    getblock: async (input: HandlerInput) => {
      const [hashheight, verbosity] = paramsOf(input) as [string, number];
      // A height names whatever block is there now: resolve it uncached, then read the block by its hash.
      const hash = /^[0-9]{1,10}$/.test(hashheight) ? await call<string>(input, 'getblockhash', [Number(hashheight)], { cache: false }) : hashheight;
      return call(input, 'getblock', [hash, verbosity]);
    },

    listcorenodes: async (input: HandlerInput) => {
      // `limit` is declared in the route's input (1 to 9999999); it is the node's, not a daemon parameter.
      const limit = input.values.limit as number | undefined;
      const list = await call(input, 'listcorenodes', paramsOf(input));
      return limit !== undefined && Array.isArray(list) ? list.slice(0, limit) : list;
    },
  };
}
