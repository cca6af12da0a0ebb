/**
 * Regtest-sized synthetic blocks for the explorer's per-run benchmarks (explorer-pg-runs.ts,
 * explorer-sqlite-thread.ts): 20 outputs to ~1,000 addresses a block, and from block 40 on 8 spends of
 * outputs 40 blocks back, so runs of 32 blocks carry 640 outputs and 256 spends like the regtest chain of
 * `npm run bench:explorer`.
 */
import { createHash } from 'node:crypto';
import type { ParsedBlock, Utxo } from '../../plugins/explorer/store.ts';

const h = (s: string) => createHash('sha256').update(s).digest('hex');

export function regtestSizedBlocks(count: number): ParsedBlock[] {
  const blocks: ParsedBlock[] = [];
  let prev = '';
  for (let k = 0; k < count; k++) {
    const outputs: Utxo[] = [];
    for (let i = 0; i < 20; i++) outputs.push({ txid: h(`t${k}:${i >> 2}`), vout: i & 3, address: `rltc1q${h(`a${(k * 20 + i) % 997}`).slice(0, 36)}`, satoshis: 1000 + i, height: k, scriptPubKey: '0014' + h(`s${i}`).slice(0, 40), coinbase: false });
    const spends = k < 40 ? [] : Array.from({ length: 8 }, (_, i) => ({ txid: h(`t${k}:${i >> 1}`), prevTxid: h(`t${k - 40}:${i}`), prevVout: 0 }));
    const hash = h(`b${k}`);
    blocks.push({ height: k, hash, prev, outputs, spends, txCount: 6 });
    prev = hash;
  }
  return blocks;
}
