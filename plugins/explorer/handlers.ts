/** The /explorer route handlers: per-address reads, the sync check, and the operator's scanner controls. */
import { ApiError, type HandlerInput } from '../../core/plugin-api.ts';
import { RpcError, type RpcClient } from '../daemon/api.ts';
import { looksLikeAddress } from './address.ts';
import type { Scanner } from './scanner.ts';
import type { ExplorerStore } from './store.ts';

export interface HandlerDeps {
  rpc: RpcClient;
  store: ExplorerStore;
  scanner: Scanner;
  startHeight: number;
}

const bad = (message: string) => new ApiError(400, 'BadRequest', message);

/** Daemon failures reach the caller as envelope errors with the daemon's code and message. */
function fromDaemon(e: unknown): never {
  if (e instanceof RpcError) throw new ApiError(e.code, e.name, e.message);
  throw e;
}

/** The daemon says which network an address belongs to; answers are remembered (bounded). */
class AddressCheck {
  private readonly known = new Map<string, boolean>();
  constructor(private readonly rpc: RpcClient) {}

  async valid(address: string): Promise<boolean> {
    const hit = this.known.get(address);
    if (hit !== undefined) return hit;
    let answer: { isvalid?: boolean };
    try {
      answer = await this.rpc.call<{ isvalid?: boolean }>('validateaddress', [address]);
    } catch (e) {
      // No daemon to ask: the checksum already passed, so answer from the index rather than fail.
      if (e instanceof RpcError && e.kind !== 'rpc') return true;
      throw e;
    }
    if (this.known.size >= 10_000) this.known.delete(this.known.keys().next().value!);
    this.known.set(address, answer.isvalid === true);
    return answer.isvalid === true;
  }
}

export function explorerHandlers({ rpc, store, scanner, startHeight }: HandlerDeps) {
  const check = new AddressCheck(rpc);
  let busy: Promise<unknown> | null = null;

  async function addressOf({ params, query }: HandlerInput): Promise<string> {
    const raw = params.address ?? query.address;
    if (raw === undefined || raw === '') throw bad('No address provided');
    const address = String(raw);
    if (!looksLikeAddress(address)) throw bad(`Invalid address: ${address.slice(0, 128)} is not a base58check or bech32 address`);
    if (!(await check.valid(address).catch(fromDaemon))) throw bad(`Invalid address: ${address} does not belong to the daemon's network`);
    return address;
  }

  /** Operator controls run one at a time; a second call meanwhile is refused (reference text). */
  async function exclusive<T>(run: () => Promise<T>): Promise<T> {
    if (busy) throw new ApiError(409, 'Conflict', 'Operation blocked');
    const p = run();
    busy = p;
    try {
      return await p;
    } finally {
      busy = null;
    }
  }

  function scannedHeight(): number | null {
    const tip = store.tip();
    return tip && tip.height >= startHeight ? tip.height : null;
  }

  const handlers = {
    utxo: async (input: HandlerInput) => {
      const address = await addressOf(input);
      const tip = store.tip()?.height;
      return (await store.utxos(address)).map((u) => ({ ...u, confirmations: tip === undefined ? 0 : tip - u.height + 1 }));
    },
    transactions: async (input: HandlerInput) => {
      const address = await addressOf(input);
      return { address, transactions: await store.transactions(address) };
    },
    balance: async (input: HandlerInput) => {
      const sum = await store.balance(await addressOf(input));
      if (sum > BigInt(Number.MAX_SAFE_INTEGER)) throw new ApiError(500, 'BalanceTooLarge', 'The balance exceeds the exact integer range of JSON numbers');
      return Number(sum);
    },
    scannedheight: () => {
      const h = scannedHeight();
      if (h === null) throw new ApiError(404, 'NotFound', 'Scanning not initiated');
      return { generalScannedHeight: h };
    },
    issynced: async () => {
      const [daemonHeight, best] = (await rpc.batch([{ method: 'getblockcount' }, { method: 'getbestblockhash' }]).catch(fromDaemon)) as [number | Error, string | Error];
      if (daemonHeight instanceof Error) fromDaemon(daemonHeight);
      const tip = store.tip();
      const explorerHeight = tip?.height ?? startHeight - 1;
      const heightDifference = (daemonHeight as number) - explorerHeight;
      return { synced: heightDifference === 0 && tip?.hash === best, explorerHeight, daemonHeight, heightDifference };
    },
    stop: () =>
      exclusive(async () => {
        await scanner.stop();
        return 'Block processing is stopped';
      }),
    restart: () =>
      exclusive(async () => {
        await scanner.stop();
        scanner.start();
        return 'Block processing initiated';
      }),
    reindex: () =>
      exclusive(async () => {
        await scanner.stop();
        await scanner.drop();
        scanner.start();
        return 'Explorer database reindex initiated';
      }),
    rescan: async ({ params, query }: HandlerInput) => {
      const raw = params.blockheight ?? query.blockheight;
      if (raw === undefined || raw === '') throw bad('No blockheight provided');
      if (!/^-?\d{1,15}$/.test(String(raw))) throw bad(`Block height must be an integer, got '${String(raw).slice(0, 32)}'`);
      const height = Number(raw);
      if (height < 0) throw bad('BlockHeight lower than 0');
      const scanned = scannedHeight();
      if (scanned === null) throw new ApiError(404, 'NotFound', 'No scanned height found');
      if (height >= scanned) throw bad('Block height shall be lower than currently scanned');
      return exclusive(async () => {
        await scanner.stop();
        await scanner.rollbackTo(height);
        scanner.start();
        return `Explorer rescan from blockheight ${height} initiated`;
      });
    },
  };
  return {
    handlers,
    /** Resolves once no operator control is running (dispose waits for it). */
    idle: async () => {
      while (busy) await busy.catch(() => {});
    },
  };
}
