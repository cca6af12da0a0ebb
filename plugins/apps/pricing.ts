/**
 * Prices: USD from the resources an app locks on every instance, rounded up to end in .49 or .99 (8.20),
 * then coin at the configured rate. Synced (`g:`) apps pay the full price like any other (8.20 dropped
 * their discount), so the containerData flags do not enter here.
 */
import type { AppSpec } from './spec.ts';

export interface PriceConfig {
  /** USD per core, per GB of RAM and per GB of disk, for the specification's instances (3 = one unit). */
  cpuUsd: number;
  ramUsd: number;
  hddUsd: number;
  minimumUsd: number;
  /** USD one coin buys. */
  coinUsd: number;
}

/** Up to the next x.49 or x.99. */
export function roundUsd(usd: number): number {
  const cents = Math.ceil(Math.round(usd * 1e6) / 1e4);
  const whole = Math.floor(cents / 100);
  const frac = cents % 100;
  const end = frac <= 49 ? 49 : 99;
  return Number(`${whole}.${end}`);
}

export function priceOf(spec: AppSpec, cfg: PriceConfig): { usd: number; coin: number; satoshis: bigint } {
  let usd = 0;
  for (const c of spec.components) usd += c.cpu * cfg.cpuUsd + (c.ram / 1000) * cfg.ramUsd + c.hdd * cfg.hddUsd;
  usd *= Math.max(1, spec.instances / 3);
  usd = roundUsd(Math.max(usd, cfg.minimumUsd));
  // Coin rounded up to the satoshi: a payment of exactly the answered price is enough.
  const satoshis = BigInt(Math.ceil(Math.round((usd / cfg.coinUsd) * 1e10) / 100));
  return { usd, coin: Number(satoshis) / 1e8, satoshis };
}

/** A coin amount as the daemon writes it (a JSON number) in satoshis, without float drift. */
export function toSatoshis(value: number): bigint {
  const [i, f = ''] = value.toFixed(8).split('.');
  return BigInt(i) * 100_000_000n + BigInt(f.padEnd(8, '0'));
}
