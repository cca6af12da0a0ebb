/**
 * The binary arrays the PostgreSQL store sends (pg-arrays.ts), read by a real server: each kind comes back
 * equal through `unnest`, empty arrays too, and hex that is not hex is refused here rather than stored cut short.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { boolArray, byteaArrayFromHex, int4Array, int8Array, textArray } from '../../plugins/explorer/pg-arrays.ts';
import { startPostgres, type Postgres } from './postgres.ts';

describe('explorer: binary arrays for PostgreSQL', function () {
  this.timeout(60_000);
  let server: Postgres;
  let c: pg.Client;
  before(async () => {
    server = await startPostgres();
    c = new pg.Client({ connectionString: server.url('postgres') });
    await c.connect();
  });
  after(async () => {
    await c?.end();
    await server?.stop();
  });
  const back = async (type: string, param: Buffer) => (await c.query(`SELECT x::text FROM unnest($1::${type}[]) AS x`, [param])).rows.map((r) => r.x);

  it('int4, int8 (numbers and bigints, negative and beyond 2^53), bool: the same values back', async () => {
    assert.deepEqual(await back('int4', int4Array([0, -1, 2147483647, -2147483648, 837])), ['0', '-1', '2147483647', '-2147483648', '837']);
    assert.deepEqual(await back('int8', int8Array([0, 2_100_000_000_000_000, -5, 9007199254740993n, -9223372036854775808n])), [
      '0',
      '2100000000000000',
      '-5',
      '9007199254740993',
      '-9223372036854775808',
    ]);
    assert.deepEqual(await back('bool', boolArray([true, false, true])), ['true', 'false', 'true']);
  });

  it('text (UTF-8 beyond ASCII, empty strings) and bytea from hex: the same values back', async () => {
    const texts = ['QNnYbZ3NDmYkV7XKqBsCSuSExbTRZTKuFT', '', 'été ✓ 𝄞', 'x'.repeat(5000)];
    assert.deepEqual(await back('text', textArray(texts)), texts);
    const hexes = ['00', '', 'deadBEEF', 'ab'.repeat(32)];
    assert.deepEqual(await back('bytea', byteaArrayFromHex(hexes)), hexes.map((x) => `\\x${x.toLowerCase()}`));
  });

  it('empty arrays of each kind are read as empty', async () => {
    for (const [type, buf] of [
      ['int4', int4Array([])],
      ['int8', int8Array([])],
      ['bool', boolArray([])],
      ['text', textArray([])],
      ['bytea', byteaArrayFromHex([])],
    ] as const)
      assert.deepEqual(await back(type, buf), [], type);
  });

  it('hex of odd length or with other characters is refused before anything is sent', () => {
    for (const bad of ['abc', 'zz', '0g', 'ab cd']) assert.throws(() => byteaArrayFromHex(['00', bad]), /not hex/, bad);
  });
});
