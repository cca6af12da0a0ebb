/**
 * Exact amounts. The daemon writes amounts as JSON decimals (`"value": 6.25`) and the RPC client's
 * JSON.parse turns them into doubles, so no arithmetic may touch that double. Instead we take the double's
 * shortest round-trip decimal string (what `String(x)` returns; ECMAScript requires the shortest digits that
 * read back to the same double) and shift its decimal point by 8 with string arithmetic.
 *
 * Why that is exact: an amount is a decimal with at most 8 places. Below 2^26 coins the spacing between
 * neighbouring doubles is under 1e-8, so two different 8-place amounts never share a double, and no
 * decimal with fewer digits than the original (itself an 8-place decimal, hence at least 1e-8 away) reads
 * back to it: the shortest string IS the daemon's text. At 2^26 coins and above (more than any single
 * output of the chains we follow, but not impossible in principle) that argument fails, so those values
 * are read from the transaction's serialised bytes instead (see `outputValuesFromHex`); an integer field
 * the daemon may add (`valueSat`, `valueZat`) is used as is.
 */

const UNIQUE_BELOW_COINS = 2 ** 26;

export class AmountError extends Error {}

/** Satoshis (1e-8 coin) from a JSON amount the daemon wrote with at most 8 decimals; throws when unsure. */
export function coinsToSatoshis(value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new AmountError(`not an amount: ${String(value)}`);
  if (value >= UNIQUE_BELOW_COINS) throw new AmountError(`amount ${value} is too large to read exactly from a double`);
  // The product may be off by one unit (it is rounded, and so was the double), but it is checked: the division
  // is correctly rounded, so it gives back `value` exactly when `sats` is the daemon's amount, and no other
  // amount below 2^26 coins shares that double. An output cost 0.02-0.04 us this way against 0.7-0.8 us
  // through the string (17 outputs a block in bench:explorer's chain).
  const sats = Math.round(value * 1e8);
  if (sats / 1e8 === value) return sats;
  return decimalToSatoshis(String(value));
}

/** Exact satoshis of a decimal string such as '6.25', '1e-7', '0.00012345' (at most 8 places). */
export function decimalToSatoshis(text: string): number {
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(text);
  if (!m) throw new AmountError(`not a decimal amount: ${text}`);
  const intPart = m[1];
  const frac = m[2] ?? '';
  const exp = m[3] ? Number(m[3]) : 0;
  // value = digits * 10^(exp - frac.length); satoshis = digits * 10^(8 + exp - frac.length)
  let digits = (intPart + frac).replace(/^0+(?=\d)/, '');
  const shift = 8 + exp - frac.length;
  if (shift >= 0) digits += '0'.repeat(shift);
  else {
    const dropped = digits.slice(shift);
    if (/[1-9]/.test(dropped.padStart(-shift, '0'))) throw new AmountError(`amount ${text} has more than 8 decimals`);
    digits = digits.slice(0, shift) || '0';
  }
  const sats = BigInt(digits);
  if (sats > BigInt(Number.MAX_SAFE_INTEGER)) throw new AmountError(`amount ${text} exceeds the exact integer range`);
  return Number(sats);
}

/**
 * The output values of a serialised transaction, exactly (little-endian int64 after the inputs). Reads the
 * bitcoin layout, segwit's marker and flag, and the zcash-family overwintered header (v3/v4; v5 moves the
 * lock time and expiry in front of the inputs).
 */
export function outputValuesFromHex(hex: string): bigint[] {
  const b = Buffer.from(hex, 'hex');
  let o = 0;
  const need = (n: number) => {
    if (o + n > b.length) throw new AmountError('transaction hex ends early');
  };
  const varint = (): number => {
    need(1);
    const first = b[o++];
    if (first < 0xfd) return first;
    const size = first === 0xfd ? 2 : first === 0xfe ? 4 : 8;
    need(size);
    const v = size === 2 ? b.readUInt16LE(o) : size === 4 ? b.readUInt32LE(o) : Number(b.readBigUInt64LE(o));
    o += size;
    return v;
  };
  need(4);
  const header = b.readUInt32LE(o);
  o += 4;
  const overwintered = (header & 0x80000000) !== 0;
  if (overwintered) {
    need(4);
    o += 4; // version group id
    if ((header & 0x7fffffff) >= 5) o += 12; // consensus branch id, lock time, expiry height
  } else if (b[o] === 0x00 && b[o + 1] !== 0x00) o += 2; // segwit marker and flag
  const inputs = varint();
  for (let i = 0; i < inputs; i++) {
    need(36);
    o += 36;
    const len = varint();
    need(len + 4);
    o += len + 4;
  }
  const outputs = varint();
  const values: bigint[] = [];
  for (let i = 0; i < outputs; i++) {
    need(8);
    values.push(b.readBigInt64LE(o));
    o += 8;
    const len = varint();
    need(len);
    o += len;
  }
  return values;
}

/** The satoshis of output `n` of a getblock-verbosity-2 transaction, exact in every case or an error. */
export function outputSatoshis(tx: { hex?: string }, vout: { value?: unknown; valueSat?: unknown; valueZat?: unknown; n: number }, cache: { values?: bigint[] }): number {
  for (const exact of [vout.valueSat, vout.valueZat]) if (Number.isSafeInteger(exact) && (exact as number) >= 0) return exact as number;
  if (typeof vout.value === 'number' && vout.value < UNIQUE_BELOW_COINS) return coinsToSatoshis(vout.value);
  if (typeof tx.hex !== 'string') throw new AmountError(`output ${vout.n} is too large to read exactly and the transaction carries no hex`);
  cache.values ??= outputValuesFromHex(tx.hex);
  const v = cache.values[vout.n];
  if (v === undefined || v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw new AmountError(`output ${vout.n} has no exact value in the transaction hex`);
  return Number(v);
}
