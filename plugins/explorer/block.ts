/** Turn a `getblock <hash> 2` answer into what the index stores: outputs with an address, and spends. */
import { outputSatoshis } from './amount.ts';
import type { ParsedBlock, Spend, Utxo } from './store.ts';

interface RpcVout {
  value?: number;
  valueSat?: number;
  valueZat?: number;
  n: number;
  ismweb?: boolean;
  scriptPubKey?: { hex?: string; address?: string; addresses?: string[] };
}
interface RpcVin {
  coinbase?: string;
  txid?: string;
  vout?: number;
  ismweb?: boolean;
}
export interface RpcBlock {
  hash: string;
  height: number;
  previousblockhash?: string;
  tx: { txid: string; hex?: string; vin: RpcVin[]; vout: RpcVout[] }[];
}

/** The one address an output pays, if it pays exactly one (bare multisig and data outputs pay none). */
function addressOf(spk: RpcVout['scriptPubKey']): string | undefined {
  if (!spk) return undefined;
  if (typeof spk.address === 'string') return spk.address;
  if (Array.isArray(spk.addresses) && spk.addresses.length === 1) return spk.addresses[0];
  return undefined;
}

export function parseBlock(block: RpcBlock): ParsedBlock {
  if (!block || typeof block.hash !== 'string' || !Array.isArray(block.tx)) throw new Error('the daemon answered getblock without transactions (verbosity 2 needed)');
  const outputs: Utxo[] = [];
  const spends: Spend[] = [];
  // The genesis output is not spendable and not in the daemon's UTXO set; index its block as empty.
  const txs = block.height === 0 ? [] : block.tx;
  for (const tx of txs) {
    const coinbase = tx.vin.some((v) => v.coinbase !== undefined);
    for (const vin of tx.vin) {
      if (vin.coinbase !== undefined || vin.ismweb || typeof vin.txid !== 'string') continue;
      spends.push({ txid: tx.txid, prevTxid: vin.txid, prevVout: vin.vout! });
    }
    const amounts: { values?: bigint[] } = {};
    for (const vout of tx.vout) {
      if (vout.ismweb) continue;
      const address = addressOf(vout.scriptPubKey);
      if (!address) continue;
      outputs.push({
        txid: tx.txid,
        vout: vout.n,
        address,
        satoshis: outputSatoshis(tx, vout, amounts),
        height: block.height,
        scriptPubKey: vout.scriptPubKey?.hex ?? '',
        coinbase,
      });
    }
  }
  return { height: block.height, hash: block.hash, prev: block.previousblockhash ?? '', outputs, spends, txCount: block.tx.length };
}
