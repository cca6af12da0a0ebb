/**
 * Arrays for PostgreSQL statements in the server's binary format (what `array_send` writes and
 * `array_recv` reads). node-postgres sends a Buffer parameter as binary, and a statement that casts it
 * (`$1::bytea[]`) has the server read it with the array type's receive function: no text to quote and
 * escape here (node-postgres' `arrayString`), none to parse there (`array_in`, 4% of the server's CPU while
 * indexing, perf), and txids and scripts travel as their bytes rather than as hex for `decode()`.
 *
 * Layout: ndim, has-nulls flag, element type OID, then per dimension its length and lower bound (all
 * int32, big-endian), then each element as an int32 length and its bytes. No nulls are ever sent.
 */

/** Element type OIDs (pg_type), which the server checks against the parameter's array type. */
const OID = { bool: 16, int8: 20, int4: 23, text: 25, bytea: 17 } as const;

const HEADER = 20;

function header(buf: Buffer, oid: number, n: number): number {
  buf.writeInt32BE(1, 0);
  buf.writeInt32BE(0, 4);
  buf.writeInt32BE(oid, 8);
  buf.writeInt32BE(n, 12);
  buf.writeInt32BE(1, 16);
  return HEADER;
}

/** Fixed-width elements: `width` bytes each, written by `put`. */
function fixed<T>(oid: number, width: number, xs: readonly T[], put: (buf: Buffer, x: T, at: number) => void): Buffer {
  const buf = Buffer.allocUnsafe(HEADER + xs.length * (4 + width));
  let at = header(buf, oid, xs.length);
  for (const x of xs) {
    buf.writeInt32BE(width, at);
    put(buf, x, at + 4);
    at += 4 + width;
  }
  return buf;
}

export const int4Array = (xs: readonly number[]): Buffer => fixed(OID.int4, 4, xs, (b, x, at) => b.writeInt32BE(x, at));

/** Amounts in satoshis: a number (exact below 2^53) or a bigint. */
export const int8Array = (xs: readonly (number | bigint)[]): Buffer =>
  fixed(OID.int8, 8, xs, (b, x, at) => b.writeBigInt64BE(typeof x === 'bigint' ? x : BigInt(x), at));

export const boolArray = (xs: readonly boolean[]): Buffer => fixed(OID.bool, 1, xs, (b, x, at) => b.writeUInt8(x ? 1 : 0, at));

/** Variable-width elements: strings written in `encoding` (at most `perChar` bytes a character). */
function variable(oid: number, xs: readonly string[], encoding: 'utf8' | 'hex', perChar: number): Buffer {
  let room = HEADER;
  for (const x of xs) room += 4 + Math.ceil(x.length * perChar);
  const buf = Buffer.allocUnsafe(room);
  let at = header(buf, oid, xs.length);
  for (const x of xs) {
    const n = buf.write(x, at + 4, encoding);
    // Hex of odd length or with other characters would be cut short by Buffer.write: refused, never stored.
    if (encoding === 'hex' && n * 2 !== x.length) throw new Error(`not hex: ${JSON.stringify(x.slice(0, 80))}`);
    buf.writeInt32BE(n, at);
    at += 4 + n;
  }
  return buf.subarray(0, at);
}

export const textArray = (xs: readonly string[]): Buffer => variable(OID.text, xs, 'utf8', 3);

/** Byte strings given as hex (txids, scripts): their bytes, decoded straight into the array. */
export const byteaArrayFromHex = (xs: readonly string[]): Buffer => variable(OID.bytea, xs, 'hex', 0.5);
