/**
 * Answers of 16 to ~80 KB from a daemon on this machine, on kept-alive connections against connections of
 * their own (RpcCallOptions.ownConnection), against a real litecoind in regtest:
 *   1. `getblock <hash> 2` one after another on the daemons' client (lib/daemon-rpc), for blocks of 1 to 96
 *      payments (answers of about 3 to 190 KB): ms a call kept-alive and on its own connection, and their ratio.
 *   2. The explorer's fetcher over 150 blocks of a dozen payments (answers of about 25 KB), as shipped (the
 *      client moves a method to own connections once its last answer had more than FIRST_WRITE bytes) and with
 *      every call kept-alive (ownConnection: false): blocks/s and their ratio.
 *   3. The fetcher over 60 blocks of 6 payments (answers of about 13 KB, under FIRST_WRITE) and over 60
 *      blocks alternating 6 and 12 payments (every large answer after a small one is announced on a
 *      kept-alive connection and asked again on its own), as shipped and with every call on its own
 *      connection: blocks/s and this process's CPU a block.
 * Rounds alternate; the best of ROUNDS is shown.
 *
 *   npm run bench:rpc-answers [-- --rounds 3]
 */
import { FIRST_WRITE, createRpcClient, type RpcCallOptions, type RpcClient } from '../../lib/daemon-rpc/rpc.ts';
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
  const underFrom = midTo + 1;
  for (let b = 0; b < 60; b++) await pay(6);
  const underTo = await rpc.call<number>('getblockcount');
  for (let b = 0; b < 60; b++) await pay(b % 2 ? 12 : 6);
  const mixedTo = await rpc.call<number>('getblockcount');

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

  const ownOnly: RpcClient = Object.assign(Object.create(rpc) as RpcClient, {
    call: (method: string, params?: unknown[], opts?: RpcCallOptions) => rpc.call(method, params, { ...opts, ownConnection: true }),
  });
  // Each measure fetches the 60 blocks 10 times (a single pass is over in about 50 ms).
  const fetchCpu = async (client: RpcClient, from: number, to: number) => {
    const t = performance.now();
    const cpu = process.cpuUsage();
    for (let pass = 0; pass < 10; pass++) {
      const f = new BlockFetcher(client, from, to, { window: 32 });
      while ((await f.take(32)).length);
    }
    const c = process.cpuUsage(cpu);
    const blocks = 10 * (to - from + 1);
    return { rate: blocks / ((performance.now() - t) / 1000), cpu: (c.user + c.system) / 1000 / blocks };
  };
  for (const [what, from, to] of [
    ['6 payments (answers under the first write)', underFrom, underTo],
    ['6 and 12 payments alternating', underTo + 1, mixedTo],
  ] as const) {
    const runs = { shipped: [] as { rate: number; cpu: number }[], own: [] as { rate: number; cpu: number }[] };
    for (let r = 0; r < ROUNDS; r++) {
      runs.own.push(await fetchCpu(ownOnly, from, to));
      runs.shipped.push(await fetchCpu(rpc, from, to));
    }
    const best = (xs: { rate: number; cpu: number }[]) => xs.reduce((a, b) => (b.rate > a.rate ? b : a));
    const [sh, ow] = [best(runs.shipped), best(runs.own)];
    const sizes: number[] = [];
    for (let h = from; h <= to; h++) sizes.push(JSON.stringify(await rpc.call('getblock', [await rpc.call<string>('getblockhash', [h]), 2])).length);
    const small = sizes.filter((b) => b < FIRST_WRITE - 200).length;
    console.log(`\n## explorer fetcher over blocks ${from}..${to}, ${what}, look-ahead 32 (best of ${ROUNDS})`);
    console.log(`answers ${Math.min(...sizes)}-${Math.max(...sizes)} B, ${small} of ${sizes.length} under the first write with their headers`);
    console.log(`every call on its own connection ${ow.rate.toFixed(0)} blocks/s, ${ow.cpu.toFixed(2)} ms CPU a block; as shipped ${sh.rate.toFixed(0)} blocks/s, ${sh.cpu.toFixed(2)} ms: ratio ${(sh.rate / ow.rate).toFixed(2)}x`);
  }
  rpc.close();
} finally {
  await ltc.stop();
}
