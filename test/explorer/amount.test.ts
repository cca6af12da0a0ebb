/** Exact amounts and address formats: no floating point between the daemon's JSON and the index. */
import assert from 'node:assert/strict';
import { AmountError, coinsToSatoshis, decimalToSatoshis, outputSatoshis, outputValuesFromHex } from '../../plugins/explorer/amount.ts';
import { addressForm, isBase58Check, isBech32, looksLikeAddress } from '../../plugins/explorer/address.ts';

describe('explorer amounts', () => {
  it('reads the daemon JSON decimals exactly (the cases a float multiply gets wrong)', () => {
    // JSON.parse of the daemon's text, as the RPC client does it.
    const cases: [string, number][] = [
      ['6.25', 625_000_000],
      ['0.00000001', 1],
      ['0.1', 10_000_000],
      ['0.29', 29_000_000], // 0.29 * 1e8 = 28999999.999999996
      ['1.15', 115_000_000], // 1.15 * 1e8 = 114999999.99999999
      ['4.35', 435_000_000],
      ['0.00012345', 12_345],
      ['50.0000502', 5_000_005_020],
      ['20999999.99999999', 2_099_999_999_999_999],
      ['67108863.99999999', 6_710_886_399_999_999],
      ['0', 0],
      ['1e-7', 10],
    ];
    for (const [text, sats] of cases) assert.equal(coinsToSatoshis(JSON.parse(text)), sats, text);
    assert.notEqual(0.29 * 1e8, 29_000_000); // what floating point would have stored
  });

  it('is exact for every 8-place amount tried, including exponent forms', () => {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 20000; i++) {
      const sats = BigInt(rand()) * BigInt(rand() % 31250) + BigInt(rand() % 100);
      if (sats >= 2n ** 26n * 100_000_000n) continue;
      const text = `${sats / 100_000_000n}.${(sats % 100_000_000n).toString().padStart(8, '0')}`;
      assert.equal(coinsToSatoshis(JSON.parse(text)), Number(sats), text);
    }
    for (let s = 1; s < 1000; s++) assert.equal(coinsToSatoshis(s / 1e8), s); // 1e-8 .. 9.99e-6 print as exponents
  });

  it('agrees with the decimal string on amounts a bare multiply gets wrong', () => {
    // About 2% of amounts below 2^26 coins come out of value * 1e8 off by one unit after rounding.
    let seed = 11;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    let offByOne = 0;
    for (let i = 0; i < 100_000; i++) {
      const sats = Math.floor(rand() * 2 ** 26) * 100_000_000 + Math.floor(rand() * 100_000_000);
      const value = sats / 1e8;
      if (Math.round(value * 1e8) !== sats) offByOne++;
      assert.equal(coinsToSatoshis(value), decimalToSatoshis(String(value)));
      assert.equal(coinsToSatoshis(value), sats);
    }
    assert.ok(offByOne > 0, 'the sweep holds amounts a bare multiply gets wrong');
  });

  it('refuses what it cannot read exactly', () => {
    assert.throws(() => coinsToSatoshis(2 ** 26), AmountError);
    assert.throws(() => coinsToSatoshis(-1), AmountError);
    assert.throws(() => coinsToSatoshis(Number.NaN), AmountError);
    assert.throws(() => coinsToSatoshis('1' as unknown), AmountError);
    assert.throws(() => decimalToSatoshis('0.000000001'), /more than 8 decimals/);
    assert.throws(() => coinsToSatoshis(JSON.parse('0.000000015')), /more than 8 decimals/);
    assert.throws(() => coinsToSatoshis(JSON.parse('1234.123456785')), /more than 8 decimals/);
    assert.equal(decimalToSatoshis('123.4'), 12_340_000_000);
  });

  it('reads large outputs from the transaction bytes (legacy, segwit, overwintered)', () => {
    // A legacy tx with one input and two outputs: 84,000,000.00000001 and 0.5 coins.
    const big = 8_400_000_000_000_001n;
    const le = (v: bigint) => {
      const b = Buffer.alloc(8);
      b.writeBigInt64LE(v);
      return b.toString('hex');
    };
    const input = '11'.repeat(32) + '00000000' + '00' + 'ffffffff';
    const outs = '02' + le(big) + '01' + '51' + le(50_000_000n) + '00';
    const legacy = '01000000' + '01' + input + outs + '00000000';
    assert.deepEqual(outputValuesFromHex(legacy), [big, 50_000_000n]);
    const segwit = '02000000' + '0001' + '01' + input + outs + '00' + '00000000';
    assert.deepEqual(outputValuesFromHex(segwit), [big, 50_000_000n]);
    const v4 = '04000080' + '85202f89' + '01' + input + outs + '00000000';
    assert.deepEqual(outputValuesFromHex(v4), [big, 50_000_000n]);
    // The decoder is used only where the double is ambiguous; its value wins there.
    assert.equal(outputSatoshis({ hex: legacy }, { value: 84_000_000.00000001, n: 0 }, {}), Number(big));
    assert.equal(outputSatoshis({}, { value: 1, valueSat: 123, n: 0 }, {}), 123);
    assert.throws(() => outputSatoshis({}, { value: 84_000_000, n: 0 }, {}), AmountError);
  });
});

describe('explorer address formats', () => {
  it('gives addresses the daemon decides alike one form, and none where it may decide apart', () => {
    const same = (a: string, b: string) => assert.equal(addressForm(a), addressForm(b), `${a} ${b}`);
    const apart = (a: string, b: string) => assert.notEqual(addressForm(a), addressForm(b), `${a} ${b}`);
    same('mzmRcQhtN2gJAgw8JEQEoFETdSnMcumjov', 'mjfEB76C11ygeTod2HRkKkbJJx5u4rgXRu'); // regtest key hashes
    apart('mzmRcQhtN2gJAgw8JEQEoFETdSnMcumjov', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2'); // another network
    apart('1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy'); // key hash, script hash
    same('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4');
    apart('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'rltc1qyv3tsnzhrcmfx65fnxwhj0euqale490ul0m0jx'); // hrp
    apart('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3'); // 20 and 32 bytes
    apart('bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297'); // v0, v1
    assert.equal(addressForm('nonsense'), null);
    assert.equal(addressForm('1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3'), null, 'bad checksum');
  });

  it('accepts base58check and bech32 addresses with valid checksums only', () => {
    for (const a of ['1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy', 'mzmRcQhtN2gJAgw8JEQEoFETdSnMcumjov', 'QTYAeou7vjqY1GJYvuP5K7GUtZcQzJQAfn'])
      assert.ok(isBase58Check(a), a);
    for (const a of ['rltc1qyv3tsnzhrcmfx65fnxwhj0euqale490ul0m0jx', 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4'])
      assert.ok(isBech32(a), a);
    assert.ok(isBech32('bc1p5d7rjq7g6rdk2yhzks9smlaqtedr4dekq08ge8ztwac72sfr9rusxg3297')); // bech32m (taproot)
    for (const a of ['', 'x', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN3', 'mzmRcQhtN2gJAgw8JEQEoFETdSnMcumjoV', '0OIl' + 'a'.repeat(30), 'rltc1qyv3tsnzhrcmfx65fnxwhj0euqale490ul0m0jy', 'Rltc1qyv3tsnzhrcmfx65fnxwhj0euqale490ul0m0jx', "1' OR '1'='1", 'a'.repeat(200)])
      assert.ok(!looksLikeAddress(a), a);
  });
});
