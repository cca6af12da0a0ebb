/**
 * Registry payments: transactions to the registry address found in the explorer's scanned blocks (the
 * `explorer-payments` service), read once each from the daemon for their amount and OP_RETURN hash. A
 * payment with enough confirmations makes its message permanent; a payment the explorer no longer lists
 * (a reorganisation undid its block) is dropped, and its message with it.
 */
import { PeriodicWork } from './periodic.ts';
import type { Collection } from '../../core/plugin-api.ts';
import type { RpcClient } from '../daemon/api.ts';
import { toSatoshis } from './pricing.ts';
import type { Registry } from './registry.ts';

export interface ExplorerPayments {
  tip(): { height: number; hash: string } | null;
  transactions(address: string): Promise<{ txid: string; height: number }[]>;
}

export interface Payment {
  txid: string;
  height: number;
  /** The message hash in the OP_RETURN output; '' when there is none. */
  hash: string;
  valueSat: string;
  /** What the registry made of it once confirmed. */
  outcome?: string;
}

interface RawTx {
  txid: string;
  vout: { value: number; scriptPubKey?: { hex?: string; address?: string; addresses?: string[]; type?: string } }[];
}

/** The 64-hex message hash an OP_RETURN output carries (as ASCII text, or as 32 raw bytes). */
export function opReturnHash(hex: string | undefined): string {
  if (!hex || !hex.startsWith('6a')) return '';
  let i = 2;
  const op = parseInt(hex.slice(i, i + 2), 16);
  i += 2;
  let len = op;
  if (op === 0x4c) {
    len = parseInt(hex.slice(i, i + 2), 16);
    i += 2;
  } else if (op > 0x4b) return '';
  const data = Buffer.from(hex.slice(i, i + len * 2), 'hex');
  const text = data.toString('latin1');
  if (/^[0-9a-f]{64}$/i.test(text)) return text.toLowerCase();
  if (data.length === 32) return data.toString('hex');
  return '';
}

export class PaymentWatcher extends PeriodicWork {
  lastError: string | null = null;
  /**
   * The explorer's tip (`height:hash`) the address's transactions were last listed and taken in at. The list
   * only changes when the explorer applies or undoes a block, which moves its tip; while the tip stands a round
   * only looks at the payments still waiting. Listing every round read the address's whole history each
   * time (every payment ever made to the registry) for nothing between blocks.
   */
  private listedAt: string | null = null;

  constructor(
    private readonly o: {
      store: Collection<Payment>;
      registry: Registry;
      address: string;
      minConfirmations: number;
      explorer: () => ExplorerPayments | null;
      daemon: () => RpcClient | null;
      price: (spec: Record<string, any>) => bigint;
      log: { warn(o: object, m: string): void; info(o: object, m: string): void };
    },
  ) {
    super();
  }

  protected roundFailed(e: Error): void {
    this.lastError = e.message;
    this.o.log.warn({ err: this.lastError }, 'apps: reading registry payments failed; retrying');
  }

  protected async round(): Promise<void> {
    const explorer = this.o.explorer();
    const daemon = this.o.daemon();
    if (!explorer || !daemon || !this.o.address) return;
    const tip = explorer.tip();
    if (!tip) return;
    const at = `${tip.height}:${tip.hash}`;
    if (at !== this.listedAt) {
      await this.takeIn(explorer, daemon);
      // Only after a listing that went through: a round that failed midway lists again next time. A block
      // applied while listing moves the tip past `at`, so the next round lists again too.
      this.listedAt = at;
    }
    await this.confirmWaiting(tip.height);
  }

  /** The address's listed transactions into the store: undone ones dropped, new ones read from the daemon. */
  private async takeIn(explorer: ExplorerPayments, daemon: RpcClient): Promise<void> {
    const refs = await explorer.transactions(this.o.address);
    const listed = new Map(refs.map((r) => [r.txid, r.height]));
    // Reorganisations: a payment whose block was undone is not listed (or listed at another height).
    for (const p of await this.o.store.find({})) {
      if (listed.get(p.txid) === p.height) continue;
      const dropped = await this.o.registry.drop(p.txid);
      await this.o.store.remove({ txid: p.txid }, { multi: true });
      if (dropped.length) this.o.log.info({ txid: p.txid, hashes: dropped }, 'apps: payment no longer on the chain; its messages are not permanent any more');
    }
    const known = new Set((await this.o.store.find({})).map((p) => p.txid));
    for (const ref of refs) {
      if (known.has(ref.txid)) continue;
      const tx = await daemon.call<RawTx>('getrawtransaction', [ref.txid, 1], { cache: false } as any);
      let value = 0n;
      let hash = '';
      for (const out of tx.vout) {
        const spk = out.scriptPubKey;
        const addr = spk?.address ?? (spk?.addresses?.length === 1 ? spk.addresses[0] : undefined);
        if (addr === this.o.address) value += toSatoshis(out.value);
        hash ||= opReturnHash(spk?.hex);
      }
      await this.o.store.insert({ txid: ref.txid, height: ref.height, hash, valueSat: value.toString() });
    }
  }

  /** Payments not yet settled: confirmed against the registry once they have enough confirmations. */
  private async confirmWaiting(tip: number): Promise<void> {
    for (const p of await this.o.store.find({ outcome: { $exists: false } })) {
      if (!p.hash || p.valueSat === '0') {
        await this.o.store.update({ txid: p.txid }, { $set: { outcome: 'not a registry payment' } });
        continue;
      }
      if (tip - p.height + 1 < this.o.minConfirmations) continue;
      const outcome = await this.o.registry.confirm({ hash: p.hash, txid: p.txid, height: p.height, valueSat: BigInt(p.valueSat) }, this.o.price);
      // An unknown hash may still arrive as a temporary message: look again next time.
      if (outcome === 'unknown') continue;
      await this.o.store.update({ txid: p.txid }, { $set: { outcome } });
      this.o.log.info({ txid: p.txid, hash: p.hash, outcome }, 'apps: registry payment confirmed');
    }
  }
}
