/**
 * Answers of 16 to ~80 KB from a daemon on this machine, on kept-alive connections against connections of
 * their own (RpcCallOptions.ownConnection), against a real litecoind in regtest:
 *   1. `getblock <hash> 2` one after another on the daemons' client (lib/daemon-rpc), for blocks of 1 to 96
 *      payments (answers of about 3 to 190 KB): ms a call kept-alive and on its own connection, and their ratio.
 *   2. The explorer's fetcher over 150 blocks of a dozen payments (answers of about 25 KB), as shipped (the
 *      client moves a method to own connections once its last answer had OWN_CONNECTION_FROM bytes) and with
 *      every call kept-alive (ownConnection: false): blocks/s and their ratio.
 * Rounds alternate; the best of ROUNDS is shown.
 *
 *   npm run bench:rpc-answers [-- --rounds 3]
 */
import { createRpcClient, type RpcCallOptions, type RpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { BlockFetcher } from '../../plugins/explorer/fetch.ts';
import { startLitecoind } from '../../test/support/litecoind.ts';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const ROUNDS = Number(arg('rounds', '3'));

const ltc = await startLitecoind();
try {
  const rpc = createRpcClient({ url: ltc.url, user: ltc.user, password: ltc.password, name: 'daemon' });
  const to = await rpc.call<string>('getnewaddress', []);
  await rpc.call('generatetoaddress', [150, to]);
  const pay = async (n: number) => {
    for (let k = 0; k < n; k++) await rpc.call('sendtoaddress', [to, 0.01]);
    return (await rpc.call<string[]>('generatetoaddress', [1, to]))[0];
  };
  const sized: { payments: number; hash: string; bytes: number }[] = [];
  for (const payments of [1, 4, 8, 12, 24, 32, 48, 96]) {
    const hash = await pay(payments);
    sized.push({ payments, hash, bytes: JSON.stringify(await rpc.call('getblock', [hash, 2])).length });
  }
  const midFrom = (await rpc.call<number>('getblockcount')) + 1;
  for (let b = 0; b < 150; b++) await pay(12);
  const midTo = await rpc.call<number>('getblockcount');

  console.log(`## getblock one after another (ms a call, best of ${ROUNDS})`);
  const sequential = async (hash: string, own: boolean) => {
    const t = performance.now();
    for (let i = 0; i < 20; i++) await rpc.call('getblock', [hash, 2], { ownConnection: own });
    return (performance.now() - t) / 20;
  };
  for (const s of sized) {
    const kept: number[] = [];
    const own: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      kept.push(await sequential(s.hash, false));
      own.push(await sequential(s.hash, true));
    }
    const k = Math.min(...kept);
    const o = Math.min(...own);
    console.log(`${String(s.payments).padStart(3)} payments, answer ${String(s.bytes).padStart(6)} B: kept-alive ${k.toFixed(2).padStart(6)}, own connection ${o.toFixed(2).padStart(5)}, ratio own/kept ${(o / k).toFixed(2)}`);
  }

  console.log(`\n## explorer fetcher over blocks ${midFrom}..${midTo} (12 payments each), look-ahead 32 (blocks/s, best of ${ROUNDS})`);
  const keptOnly: RpcClient = Object.assign(Object.create(rpc) as RpcClient, {
    call: (method: string, params?: unknown[], opts?: RpcCallOptions) => rpc.call(method, params, { ...opts, ownConnection: false }),
  });
  const fetchAll = async (client: RpcClient) => {
    const t = performance.now();
    const f = new BlockFetcher(client, midFrom, midTo, { window: 32 });
    while ((await f.take(32)).length);
    return (midTo - midFrom + 1) / ((performance.now() - t) / 1000);
  };
  const shipped: number[] = [];
  const kept: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    kept.push(await fetchAll(keptOnly));
    shipped.push(await fetchAll(rpc));
  }
  const s = Math.max(...shipped);
  const k = Math.max(...kept);
  console.log(`kept-alive only ${k.toFixed(0)}, as shipped ${s.toFixed(0)}: ratio ${(s / k).toFixed(1)}x`);
  rpc.close();
} finally {
  await ltc.stop();
}
