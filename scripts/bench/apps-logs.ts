/**
 * `npm run bench:apps-logs`: what log answers cost the node's memory. The shipped node process (the
 * tenant harness, test/tenants/node.ts) on the test Docker and a regtest litecoind; one owner's app whose
 * container wrote 13 MB to its log (13,000 lines of 1,000 bytes); full `GET /apps/applog/:app/all` calls
 * by that owner, the node's RSS sampled every 10 ms (peak less the figure before). Printed, ROUNDS each:
 *
 * 1. one call (the baseline of this run);
 * 2. eight concurrent calls with the default bounds (4 per caller): four streamed, four refused;
 * 3. eight concurrent calls with the caller bound raised to 8: all eight streamed (streaming alone).
 *
 * Goal: eight concurrent calls raise RSS by under 50 MB.
 */
import { ensureDocker, stopDocker } from '../../test/support/docker.ts';
import { startLitecoind } from '../../test/support/litecoind.ts';
import { component, last, ndjson, until, v8Spec } from '../../test/apps/support.ts';
import { freeTenantPort, registerAndPay, startTenantNode, tenantWallets, type TenantNode } from '../../test/tenants/node.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 3);
const LINES = 13_000;
const WRITE_LOG = `L=$(head -c 999 /dev/zero | tr '\\0' x); yes "$L" | head -n ${LINES}; echo end-of-log; trap "exit 0" TERM; sleep 3600 & wait`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function load(node: TenantNode, app: string, n: number) {
  const before = node.rssMb();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, node.rssMb())), 10);
  const t0 = performance.now();
  const answers = await Promise.all(
    Array.from({ length: n }, async () => {
      const res = await fetch(`http://127.0.0.1:${node.port}/apps/applog/${app}/all`, { headers: node.headers.b });
      return (await res.json()) as { status: string; data: any };
    }),
  );
  const ms = performance.now() - t0;
  clearInterval(sampler);
  const served = answers.filter((a) => a.status === 'success');
  if (served.some((a) => a.data.length !== LINES * 1000 + 11)) throw new Error('a served log was not whole');
  return { rise: peak - before, before, peak, served: served.length, refused: n - served.length, ms };
}

async function main() {
  const [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
  let node: TenantNode | null = null;
  try {
    await ltc.mine(101);
    const registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    const variants: [string, Record<string, unknown>, number][] = [
      ['one call (baseline)', {}, 1],
      ['8 concurrent, default bounds (4 per caller, 16 in all)', {}, 8],
      ['8 concurrent, caller bound raised to 8 (streaming alone)', { streams: { perCaller: 8, total: 16 } }, 8],
    ];
    let i = 0;
    for (const [label, apps, n] of variants) {
      const w = tenantWallets();
      node = await startTenantNode({ docker, ltc, registryAddress, wallets: w, apps });
      const app = `logbench${i++}`;
      const spec = v8Spec(w.b.legacyid, app, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: ['/bin/sh', '-c', WRITE_LOG] })]);
      await registerAndPay(node, ltc, registryAddress, 'b', w, spec);
      const lines = ndjson(await node.get(`/apps/installapplocally/${app}`, node.headers.admin));
      if (last(lines).status !== 'success') throw new Error(JSON.stringify(last(lines)));
      await until('13 MB logged', async () => (await docker.cli(['logs', '--tail', '1', `coreweb_${app}`])).trim() === 'end-of-log');
      await load(node, app, 1); // warm: the route's first call loads what it uses
      const runs = [];
      for (let r = 0; r < ROUNDS; r++) runs.push(await load(node, app, n));
      const rises = runs.map((x) => x.rise);
      console.log(`${label}: RSS +${median(rises).toFixed(1)} MB median [${rises.map((x) => x.toFixed(1)).join(', ')}], from ${runs[0].before.toFixed(0)} MB; served ${runs[0].served}, refused ${runs[0].refused}; ${median(runs.map((x) => x.ms)).toFixed(0)} ms`);
      await node.get(`/apps/appremove/${app}/true`, node.headers.coreTeam).catch(() => {});
      await node.stop();
      node = null;
    }
    console.log('goal: eight concurrent calls raise RSS by under 50 MB');
  } finally {
    await node?.stop().catch(() => {});
    await ltc.stop();
    await stopDocker();
  }
}

main().catch(async (e) => {
  console.error(e);
  await stopDocker();
  process.exit(1);
});
