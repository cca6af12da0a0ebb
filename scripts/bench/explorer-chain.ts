/**
 * The regtest chain of the explorer's benchmarks (`explorer.ts`, `explorer-replay.ts`): 100 blocks mined to
 * 20 wallet addresses, 100 to a sink, then blocks of 4 payments each (2 inputs, 4 outputs).
 */
import { coinsToSatoshis } from '../../plugins/explorer/amount.ts';
import type { Regtest } from '../../test/support/litecoind.ts';

/**
 * Transactions are built with createrawtransaction + signrawtransactionwithwallet (the wallet's own coin
 * selection costs ~30 ms a payment at this size): each block carries 4 transactions, each spending two
 * earlier outputs of 20 wallet addresses (legacy and bech32) and paying four outputs.
 */
export async function buildChain(ltc: Regtest, blocks: number): Promise<void> {
  const rpc = ltc.rpc;
  const wallet: string[] = [];
  for (let i = 0; i < 20; i++) wallet.push(await rpc.call<string>('getnewaddress', ['', i % 2 ? 'bech32' : 'legacy']));
  for (let i = 0; i < 100; i++) await ltc.mine(1, wallet[i % 20]);
  const sink = await rpc.call<string>('getnewaddress', ['', 'legacy']);
  await ltc.mine(100, sink);
  const pool = (await rpc.call<{ txid: string; vout: number; address: string; amount: number }[]>('listunspent'))
    .filter((u) => wallet.includes(u.address))
    .map((u) => ({ txid: u.txid, vout: u.vout, sats: coinsToSatoshis(u.amount) }));
  const fmt = (sats: number) => (sats / 1e8).toFixed(8);
  const t0 = Date.now();
  let txs = 0;
  for (let b = 0; b < blocks - 200; b++) {
    const specs: { ins: { txid: string; vout: number; sats: number }[]; outs: Record<string, string>[]; w: number[] }[] = [];
    for (let k = 0; k < 4; k++) {
      const ins = [pool.shift()!, pool.shift()!];
      const sum = ins[0].sats + ins[1].sats;
      const small = Math.floor(sum / 200);
      const rest = sum - 2 * small - 30_000;
      const w = [Math.floor(rest / 2), rest - Math.floor(rest / 2)];
      const outs = [{ [wallet[(b + k) % 10]]: fmt(w[0]) }, { [wallet[10 + ((b * 3 + k) % 9)]]: fmt(w[1]) }, { [sink]: fmt(small) }, { [wallet[19]]: fmt(small) }];
      specs.push({ ins, outs, w });
    }
    const raws = await rpc.batch(specs.map((s) => ({ method: 'createrawtransaction', params: [s.ins.map(({ txid, vout }) => ({ txid, vout })), s.outs] })));
    const signed = await rpc.batch(raws.map((x) => ({ method: 'signrawtransactionwithwallet', params: [x] })));
    const sent = await rpc.batch(signed.map((x) => ({ method: 'sendrawtransaction', params: [(x as { hex: string }).hex] })));
    sent.forEach((txid, k) => {
      if (txid instanceof Error) throw txid;
      pool.push({ txid: txid as string, vout: 0, sats: specs[k].w[0] }, { txid: txid as string, vout: 1, sats: specs[k].w[1] });
      txs++;
    });
    await ltc.mine(1, sink);
  }
  console.log(`chain: ${blocks} blocks, ${txs} payments built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}
