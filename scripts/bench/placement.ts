/**
 * Placement on real hosts (test/support/testbed, as root): the five-node network of the placement scenarios
 * (`placementNetwork` in test/support/testbed/networks.ts: three public nodes, one without room for any
 * app, one behind a NAT router with UPnP, each with its own dockerd). Nobody installs by hand. Per round a
 * fresh app with `instances: 3` is registered and paid, then:
 * - the time from the payment's confirmation until 3 nodes run it (each node's own listing, sampled every
 *   second: figures are within about a second);
 * - a node running it killed with -9: the time until another runs it. The goal is 90 s; anchors: the
 *   reference keeps a silent node's locations for hours, Kubernetes evicts pods from an unreachable node
 *   after about 5 minutes by default;
 * - the killed node started again (its dockerd kept the container, so it runs one instance too many): the
 *   time until the surplus is trimmed and every node agrees on 3;
 * - with `--split <seconds>`, the network split 2|3 that long, then healed: the time until exactly 3;
 * - over the round: the largest number of instances at any moment, the installs made and those trimmed
 *   later (wasted work).
 * The rounds share the nodes: an earlier round's app keeps running (every node has room for five).
 *
 *   npm run bench:placement [-- --rounds 2 --split 60]
 */
import { startApps } from '../../test/support/testbed/apps.ts';
import { CensusTimeline } from '../../test/support/testbed/census-timeline.ts';
import { EventLog } from '../../test/support/testbed/event-log.ts';
import { Testbed, type TestbedNode } from '../../test/support/testbed/index.ts';
import { newWallet } from '../../test/support/testbed/keys.ts';
import { PLACEMENT_NODES, placementFirewalls, placementNetwork } from '../../test/support/testbed/networks.ts';
import { component, fundChain, registerAndPay, serveOnSigterm, v8Spec } from '../../test/support/testbed/paid-apps.ts';
import { Figures, installAttempts, trimmed } from '../../test/support/testbed/placement-figures.ts';
import { everyNodePlanning, settled } from '../../test/support/testbed/placement-waits.ts';
import { login } from '../../test/support/wallets.ts';

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const ROUNDS = arg('rounds', 1);
const SPLIT_S = arg('split', 0);
const SPLIT = [['pub1', 'pub2'], ['pub3', 'small', 'home1']];
const s = (from: number, to: number) => (to - from) / 1000;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

async function main() {
  const t0 = Date.now();
  const tb = await Testbed.start(placementNetwork());
  const apps = await startApps(tb).catch(async (e) => {
    await tb.stop();
    throw e;
  });
  let log: EventLog | undefined;
  let census: CensusTimeline | undefined;
  try {
    const nodes = PLACEMENT_NODES.map((n) => tb.node(n));
    placementFirewalls(tb);
    await Promise.all([fundChain(tb), ...nodes.map((n) => n.start())]);
    log = new EventLog(nodes);
    census = new CensusTimeline(nodes);
    const admin = new Map<string, Record<string, string>>();
    const auth = async (n: TestbedNode) => {
      if (!admin.has(n.name)) admin.set(n.name, { legacyidauth: (await login(n, n.operator)).header });
      return admin.get(n.name)!;
    };
    await everyNodePlanning(tb, auth);
    console.log(`testbed ${tb.net.prefix}: 5 nodes planning ${s(t0, Date.now()).toFixed(1)} s after the start`);
    const owner = newWallet();
    const table = new Figures();
    const per: Record<string, number[]> = { paid: [], loss: [], trim: [], heal: [] };
    for (let r = 1; r <= ROUNDS; r++) {
      const app = `bench${r}`;
      const spec = { ...v8Spec(owner.legacyid, app, [component('web', apps.image, 31100 + r, 8080, { commands: serveOnSigterm() })]), instances: 3 };
      const paid = await registerAndPay(tb, tb.node('pub1'), owner, apps.registryAddress, spec);
      const three = await census.until(app, (c) => c.running.length === 3, { since: paid.confirmedAt, timeoutMs: 180_000, what: '3 running' });
      await settled(tb, census, app, 3, { since: three.at, timeoutMs: 60_000, what: 'settled on 3' });
      per.paid.push(s(paid.confirmedAt, three.at));

      // A public runner, a different one each round where it can.
      const runners = census.latest(app)!.running.filter((n) => n !== 'home1');
      const victim = tb.node(runners[(r - 1) % runners.length]);
      const killedAt = Date.now();
      await victim.kill();
      const back = await census.until(app, (c) => c.running.length === 3 && !c.running.includes(victim.name), { since: killedAt, timeoutMs: 300_000, what: 'a replacement' });
      per.loss.push(s(killedAt, back.at));
      const restartedAt = Date.now();
      await victim.start();
      const trim = await settled(tb, census, app, 3, { since: restartedAt, timeoutMs: 300_000, what: 'trimmed to 3' });
      per.trim.push(s(restartedAt, trim.at));

      let heal = '';
      if (SPLIT_S > 0) {
        for (const a of SPLIT[0]) for (const b of SPLIT[1]) tb.cutBetween(a, b);
        await new Promise((res) => setTimeout(res, SPLIT_S * 1000));
        for (const a of SPLIT[0]) for (const b of SPLIT[1]) tb.healBetween(a, b);
        const healedAt = Date.now();
        const done = await settled(tb, census, app, 3, { since: healedAt, timeoutMs: 300_000, what: 'exactly 3 after the heal' });
        per.heal.push(s(healedAt, done.at));
        heal = `${s(healedAt, done.at).toFixed(1)} s`;
      }
      const installs = [...installAttempts(log, app, paid.confirmedAt).values()].flat().length;
      const row = (m: string, v: string | number) => table.add(`round ${r}`, m, v);
      row('confirmation -> 3 running', `${s(paid.confirmedAt, three.at).toFixed(1)} s`);
      row(`kill -9 of ${victim.name} -> replacement running`, `${s(killedAt, back.at).toFixed(1)} s (goal 90 s)`);
      row(`${victim.name} started again -> trimmed to 3`, `${s(restartedAt, trim.at).toFixed(1)} s`);
      if (heal) row(`split 2/3 for ${SPLIT_S} s, heal -> exactly 3`, heal);
      row('largest count (instances: 3)', census.maxRunning(app, paid.confirmedAt));
      row('installs / later trimmed', `${installs} / ${trimmed(log, app, paid.confirmedAt)}`);
    }
    if (ROUNDS > 1) {
      table.add('median', 'confirmation -> 3 running', `${median(per.paid).toFixed(1)} s`);
      table.add('median', 'loss -> replacement running', `${median(per.loss).toFixed(1)} s`);
      table.add('median', 'restart -> trimmed to 3', `${median(per.trim).toFixed(1)} s`);
      if (per.heal.length) table.add('median', 'heal -> exactly 3', `${median(per.heal).toFixed(1)} s`);
    }
    console.log(`\n${table.table()}\n`);
  } finally {
    await log?.stop();
    await census?.stop();
    await apps.stop();
    await tb.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
