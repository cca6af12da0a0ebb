/** The /explorer route handlers: per-address reads, the sync check, and the operator's scanner controls. */
import { ApiError, reply, type HandlerInput } from '../../core/plugin-api.ts';
import { RpcError, type RpcClient } from '../daemon/api.ts';
import { addressForm, canonicalAddress } from './address.ts';
import type { Scanner } from './scanner.ts';
import type { ExplorerStore, Page, TxCursor, UtxoCursor } from './store.ts';

export interface HandlerDeps {
  rpc: RpcClient;
  store: ExplorerStore;
  scanner: Scanner;
  startHeight: number;
  /** Entries in an answer when the caller gives no `limit`, and the largest `limit` accepted. */
  pageLimit: number;
}

const bad = (message: string) => new ApiError(400, 'BadRequest', message);

/** Daemon failures reach the caller as envelope errors with the daemon's code and message. */
function fromDaemon(e: unknown): never {
  if (e instanceof RpcError) throw new ApiError(e.code, e.name, e.message);
  throw e;
}

/**
 * The daemon says which network an address belongs to; answers are remembered (bounded), and so are the
 * forms (`addressForm`) of the addresses it accepted, so an address of an accepted form is not asked.
 */
class AddressCheck {
  private readonly known = new Map<string, boolean>();
  private readonly forms = new Set<string>();
  constructor(private readonly rpc: RpcClient) {}

  async valid(address: string): Promise<boolean> {
    const hit = this.known.get(address);
    if (hit !== undefined) return hit;
    const form = addressForm(address);
    if (form !== null && this.forms.has(form)) return true;
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
    // A network has a handful of forms (key hash, script hash, segwit v0 and v1 programs); bounded anyway.
    if (answer.isvalid === true && form !== null && this.forms.size < 64) this.forms.add(form);
    return answer.isvalid === true;
  }
}

/** A store that cannot answer (database down, index not open yet) is a named, temporary refusal, not a crash. */
function fromStore(e: unknown): never {
  if (e instanceof ApiError) throw e;
  throw new ApiError(503, 'ServiceUnavailable', `The explorer index cannot answer now: ${(e as Error).message}`);
}

const UTXO_CURSOR = /^(\d{1,10}):([0-9a-f]{64}):(\d{1,10})$/;
const TX_CURSOR = /^(\d{1,10}):([0-9a-f]{64})$/;
/** The cursor that continues after an entry: `<height>:<txid>[:<vout>]`. */
const utxoCursor = (u: UtxoCursor) => `${u.height}:${u.txid}:${u.vout}`;
const txCursor = (t: TxCursor) => `${t.height}:${t.txid}`;

export function explorerHandlers({ rpc, store, scanner, startHeight, pageLimit }: HandlerDeps) {
  const check = new AddressCheck(rpc);
  let busy: Promise<unknown> | null = null;

  /** `address` as the manifest declares it (path segment, else query), merged and checked by the host. */
  async function addressOf({ values }: HandlerInput): Promise<string> {
    const given: string | undefined = values.address;
    if (given === undefined) throw bad('No address provided');
    // One spelling per address, so an upper-case bech32 address finds what the lower-case one holds.
    const address = canonicalAddress(given);
    if (address === null) throw bad(`Invalid address: ${given.slice(0, 128)} is not a base58check or bech32 address (bech32 in one case)`);
    if (!(await check.valid(address).catch(fromDaemon))) throw bad(`Invalid address: ${given} does not belong to the daemon's network`);
    return address;
  }

  /** `limit`, `offset` and `cursor` of a list route (declared in the route's manifest input; bounds here). */
  function pageOf<C>(query: Record<string, any>, parse: (m: RegExpExecArray) => C, form: RegExp): Page<C> & { asked: boolean } {
    const limit = query.limit === undefined ? pageLimit : Number(query.limit);
    if (limit > pageLimit) throw bad(`limit must be at most ${pageLimit}`);
    const page: Page<C> & { asked: boolean } = { limit, asked: query.limit !== undefined };
    if (query.offset !== undefined) page.offset = Number(query.offset);
    if (query.cursor !== undefined) {
      const m = form.exec(String(query.cursor));
      if (!m) throw bad(`Invalid cursor: ${String(query.cursor).slice(0, 100)}`);
      page.after = parse(m);
    }
    return page;
  }

  /**
   * One more entry than the page is read, to know whether the list goes on. When it does, the answer keeps
   * the spec's envelope and says so in headers: `X-Explorer-Next-Cursor` (pass it as `cursor`), and
   * `X-Explorer-Capped: <pageLimit>` when the caller gave no `limit` and the list was cut at the default.
   */
  function paged<T>(items: T[], page: Page<unknown> & { asked: boolean }, cursor: (x: T) => string, data: (items: T[], next?: string) => unknown) {
    if (items.length <= page.limit) return data(items);
    const shown = items.slice(0, page.limit);
    const next = cursor(shown.at(-1)!);
    const headers: Record<string, string> = { 'X-Explorer-Next-Cursor': next };
    if (!page.asked) headers['X-Explorer-Capped'] = String(pageLimit);
    return reply(200, { status: 'success', data: data(shown, next) }, headers);
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
      const page = pageOf(input.values, (m) => ({ height: Number(m[1]), txid: m[2], vout: Number(m[3]) }), UTXO_CURSOR);
      const tip = store.tip()?.height;
      const rows = await store.utxos(address, { ...page, limit: page.limit + 1 }).catch(fromStore);
      const out = rows.map((u) => ({ ...u, confirmations: tip === undefined ? 0 : tip - u.height + 1 }));
      return paged(out, page, utxoCursor, (items) => items);
    },
    transactions: async (input: HandlerInput) => {
      const address = await addressOf(input);
      const page = pageOf(input.values, (m) => ({ height: Number(m[1]), txid: m[2] }), TX_CURSOR);
      const rows = await store.transactions(address, { ...page, limit: page.limit + 1 }).catch(fromStore);
      return paged(rows, page, txCursor, (transactions, next) => (next ? { address, transactions, next } : { address, transactions }));
    },
    balance: async (input: HandlerInput) => {
      const address = await addressOf(input);
      const sum = await store.balance(address).catch(fromStore);
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
    rescan: async ({ values }: HandlerInput) => {
      // An integer (path segment, else query) as the manifest declares it, converted and checked by the host.
      const height: number | undefined = values.blockheight;
      if (height === undefined) throw bad('No blockheight provided');
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
