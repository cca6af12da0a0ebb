/**
 * The placement scenarios of issue 34 on real hosts (test/support/testbed, as root): five node processes,
 * each with its own dockerd, Syncthing and nft firewall (nothing comes in that the node did not allow),
 * three public, one without room for any app (`small`: its reserve leaves 0.1 core), one behind a NAT
 * router with miniupnpd (`home1`, `node.upnp` on), and a visitor host on the internet side; one registry
 * every host reaches (a socket file, never cut), one chain. Nobody installs anything by hand: the owner
 * registers and pays, the nodes do the rest.
 *
 * One testbed for all six scenarios (its start is about a tenth of the file's time), in this order:
 * 1. `instances: 3` paid: within 60 s of the confirmation exactly 3 nodes run it (each node's own listings),
 *    and its port answers at each one's public address from the visitor, the NAT node's through the
 *    mapping it made on its router. pub3's operator has placement off meanwhile, so the three that may
 *    take it are known and include the NAT node;
 * 2. a node running it killed with -9: another (pub3, placement on again) runs it within 90 s; the killed
 *    node started again still runs its container, and the surplus is trimmed back to 3;
 * 3. the network split 2|3 for 2 minutes (the chain and registry stay reachable: a node's daemon is local to
 *    it) and healed: within 2 minutes exactly 3 run it. An app whose image cannot be pulled is paid just
 *    before the split, so that the split's two minutes are also the while over which its attempts are
 *    counted (6c, right after);
 * 5. the chain passes the first app's `expire`: every node removes it within 2 blocks (before scenario 4,
 *    so that the cut there moves only the `g:` app);
 * 4. a `g:` app (2 instances: a primary and a standby with its data): the primary's node cut off, the
 *    standby takes over and serves the file written before the cut; healed, one primary again. `home1`'s
 *    operator has placement off for it;
 * 6. `small` never took anything, and no node took an app while its operator had placement off (pub3 in
 *    1, home1 in 4).
 * Each scenario records its figures (the benchmark's: `npm run bench:placement`), printed at the end.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startApps, type DevnetApps } from '../support/testbed/apps.ts';
import { CensusTimeline } from '../support/testbed/census-timeline.ts';
import { EventLog } from '../support/testbed/event-log.ts';
import { Testbed, leftovers, type TestbedNode } from '../support/testbed/index.ts';
import { newWallet } from '../support/testbed/keys.ts';
import { PLACEMENT_NODES, placementFirewalls, placementNetwork } from '../support/testbed/networks.ts';
import { component, fundChain, registerAndPay, serveOnSigterm, v8Spec, type PaidApp } from '../support/testbed/paid-apps.ts';
import { Figures, installAttempts, trimmed } from '../support/testbed/placement-figures.ts';
import { everyNodePlanning, settled } from '../support/testbed/placement-waits.ts';
import { urlOf, visit } from '../support/testbed/visitor.ts';
import { eventually } from '../support/wait.ts';
import { login } from '../support/wallets.ts';

const WEB = 'web3';
const WEB_PORT = 31001;
/** Blocks the first app lives: longer than the file mines before scenario 5 (a payment block each). */
const WEB_EXPIRE = 12;
const GAPP = 'gfiles';
const GAPP_PORT = 31002;
const NOPULL = 'nopull';
const NOPULL_PORT = 31003;
/** The loop's default back-off after a failed install (apps.placement.backoffBaseMs), doubling. */
const BACKOFF_MS = 60_000;
const SPLIT = [['pub1', 'pub2'], ['pub3', 'small', 'home1']];

const data = (a: { json?: any; status: number; text: string }) => {
  if (a.json?.status !== 'success') throw new Error(`not a success: ${a.status} ${a.text.slice(0, 300)}`);
  return a.json.data;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('placement on real hosts: five nodes place paid apps by themselves (issue 34)', function () {
  this.timeout(600_000);
  let tb: Testbed;
  let apps: DevnetApps;
  let log: EventLog;
  let census: CensusTimeline;
  const owner = newWallet();
  const figures = new Figures();
  const admin = new Map<string, Record<string, string>>();
  const ownerAuth = new Map<string, Record<string, string>>();
  let web: PaidApp;
  let nopullPaid: PaidApp;
  /** When an operator had placement off for an app (scenario 6 checks nothing was taken then). */
  const offWindows: { node: string; app: string; from: number; to: number }[] = [];
  const startedAt = Date.now();

  const nodes = () => PLACEMENT_NODES.map((n) => tb.node(n));
  const auth = async (n: TestbedNode) => {
    if (!admin.has(n.name)) admin.set(n.name, { legacyidauth: (await login(n, n.operator)).header });
    return admin.get(n.name)!;
  };
  const asOwner = async (n: TestbedNode) => {
    if (!ownerAuth.has(n.name)) ownerAuth.set(n.name, { legacyidauth: (await login(n, owner)).header });
    return ownerAuth.get(n.name)!;
  };
  /** The address the internet reaches a node's apps at: its own, or its router's. */
  const publicOf = (name: string) => tb.net.host(name).publicV4!;
  const page = async (name: string, port: number, p = '/') => visit(tb.net.host('visitor'), urlOf(publicOf(name), port, p));
  /** What a person needs to look into a failure, kept after the testbed is gone (TESTBED_KEEP_LOGS=<folder>). */
  const keepLogs = (dir: string) => {
    fs.mkdirSync(dir, { recursive: true });
    for (const n of tb.nodes) if (fs.existsSync(n.logFile)) fs.copyFileSync(n.logFile, path.join(dir, `${n.name}.log`));
    fs.writeFileSync(path.join(dir, 'events.json'), JSON.stringify(log?.events ?? []));
    const samples = (census?.samples ?? []).map((s) => ({ at: s.at, nodes: Object.fromEntries([...s.nodes].map(([k, v]) => [k, v && { running: [...v.running], installed: [...v.installed] }])) }));
    fs.writeFileSync(path.join(dir, 'census.json'), JSON.stringify(samples));
  };

  before(async () => {
    tb = await Testbed.start(placementNetwork());
    apps = await startApps(tb);
    placementFirewalls(tb);
    await Promise.all([fundChain(tb), ...nodes().map((n) => n.start())]);
    log = new EventLog(nodes());
    census = new CensusTimeline(nodes());
    await everyNodePlanning(tb, auth);
    console.log(`      (testbed up and every node planning after ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`);
  });

  after(async () => {
    await log?.stop();
    await census?.stop();
    if (figures.rows.length) console.log(`\n${figures.table()}\n`);
    if (tb && process.env.TESTBED_KEEP_LOGS) keepLogs(process.env.TESTBED_KEEP_LOGS);
    const prefix = tb?.net.prefix;
    await apps?.stop();
    await tb?.stop();
    if (prefix) assert.deepEqual(leftovers(prefix), []);
  });

  it('1. instances: 3 paid on 5 nodes: within 60 s of the confirmation exactly 3 run it; its port answers at their public addresses, the NAT node’s through its UPnP mapping', async () => {
    // pub3's operator has placement off for this scenario (6: it never takes the app meanwhile), which
    // leaves exactly three nodes that may take it, the NAT node among them: its mapping is checked here.
    const pub3 = tb.node('pub3');
    assert.match(data(await pub3.post('/apps/placement', { enabled: false }, await auth(pub3))).message, /disabled/);
    offWindows.push({ node: 'pub3', app: WEB, from: Date.now(), to: Infinity });
    const spec = { ...v8Spec(owner.legacyid, WEB, [component('web', apps.image, WEB_PORT, 8080, { commands: serveOnSigterm() })]), instances: 3, expire: WEB_EXPIRE };
    web = await registerAndPay(tb, tb.node('pub1'), owner, apps.registryAddress, spec);
    const three = await census.until(WEB, (c) => c.running.length === 3, { since: web.confirmedAt, timeoutMs: 60_000, what: '3 nodes running it within 60 s of the confirmation' });
    const done = await settled(tb, census, WEB, 3, { since: three.at, timeoutMs: 30_000, what: 'exactly 3, every node agreeing, no install pending' });
    assert.deepEqual(done.census.running, ['home1', 'pub1', 'pub2']);
    assert.equal(census.maxRunning(WEB, web.confirmedAt), 3, 'more than 3 ran it at some moment');
    figures.add('1 paid', 'confirmation -> 3 running', Figures.seconds(web.confirmedAt, three.at));
    figures.add('1 paid', 'largest count', census.maxRunning(WEB, web.confirmedAt));
    figures.add('1 paid', 'install attempts', [...installAttempts(log, WEB, web.confirmedAt).values()].flat().length);
    figures.add('1 paid', 'installs trimmed', trimmed(log, WEB, web.confirmedAt));
    console.log(`      (3 running ${Figures.seconds(web.confirmedAt, three.at)} after the confirmation, on ${done.census.running.join(', ')})`);
    // Seen from the internet: each public address, the NAT node's being its router's.
    for (const r of done.census.running)
      await eventually(async () => /Hello from an app/.test((await page(r, WEB_PORT))?.body ?? ''), { what: `the app's port at ${r}'s public address ${publicOf(r)}`, everyMs: 500, timeoutMs: 20_000 });
  });

  it('2. a node running it killed with -9: another runs it within 90 s and the count is 3 again; started again, the surplus is trimmed to 3', async () => {
    // pub3 back to its config (placement on): the one node with room left to replace a lost instance.
    const pub3 = tb.node('pub3');
    data(await pub3.post('/apps/placement', { reset: true }, await auth(pub3)));
    offWindows.find((w) => w.node === 'pub3')!.to = Date.now();
    const before = census.latest(WEB)!.running;
    const victim = 'pub1';
    assert.ok(before.includes(victim), JSON.stringify(before));
    const killedAt = Date.now();
    let restartedAt = 0;
    await tb.node(victim).kill();
    try {
      const back = await census.until(WEB, (c) => c.running.length === 3 && !c.running.includes(victim), { since: killedAt, timeoutMs: 90_000, what: 'a replacement within 90 s of the kill' });
      const newcomer = back.census.running.find((n) => !before.includes(n))!;
      figures.add('2 kill -9', 'loss -> replacement running', Figures.seconds(killedAt, back.at));
      console.log(`      (${victim} killed; ${newcomer} runs it ${Figures.seconds(killedAt, back.at)} later)`);
      await eventually(async () => /Hello from an app/.test((await page(newcomer, WEB_PORT))?.body ?? ''), { what: `the app at ${newcomer}'s public address`, everyMs: 500, timeoutMs: 20_000 });
    } finally {
      // Its dockerd kept the container: started again, the node runs it too, one more than paid for.
      restartedAt = Date.now();
      if (!tb.node(victim).running()) await tb.node(victim).start();
    }
    await census.until(WEB, (c) => c.running.length === 4, { since: restartedAt, timeoutMs: 30_000, what: `${victim} back with its instance` });
    const trim = await settled(tb, census, WEB, 3, { since: restartedAt, timeoutMs: 90_000, what: 'the surplus trimmed to 3' });
    assert.ok(census.between(WEB, restartedAt).every((s) => s.census.running.length >= 3), 'the count fell below 3 while trimming');
    figures.add('2 kill -9', 'restart -> trimmed to 3', Figures.seconds(restartedAt, trim.at));
    figures.add('2 kill -9', 'largest count', census.maxRunning(WEB, killedAt));
    figures.add('2 kill -9', 'installs trimmed', trimmed(log, WEB, killedAt));
    console.log(`      (${victim} back: trimmed to 3 (${trim.census.running.join(', ')}) ${Figures.seconds(restartedAt, trim.at)} after its start)`);
  });

  it('3. split 2|3 for 2 minutes, then healed: within 2 minutes exactly 3 run it', async () => {
    // The unpullable app of scenario 6, paid now: the split's two minutes are the while its attempts are counted over.
    const nopull = { ...v8Spec(owner.legacyid, NOPULL, [component('web', apps.image.replace(/:1$/, ':absent'), NOPULL_PORT, 8080)]), instances: 3 };
    nopullPaid = await registerAndPay(tb, tb.node('pub2'), owner, apps.registryAddress, nopull);

    const splitAt = Date.now();
    for (const a of SPLIT[0]) for (const b of SPLIT[1]) tb.cutBetween(a, b);
    try {
      // The scenario's input: the network stays split this long.
      await sleep(120_000);
    } finally {
      for (const a of SPLIT[0]) for (const b of SPLIT[1]) tb.healBetween(a, b);
    }
    const healedAt = Date.now();
    const sides = SPLIT.map((side) => census.between(WEB, healedAt - 5_000, healedAt).at(-1)?.census.running.filter((n) => side.includes(n)).length);
    const done = await settled(tb, census, WEB, 3, { since: healedAt, timeoutMs: 120_000, what: 'exactly 3 within 2 minutes of the heal' });
    assert.ok(census.between(WEB, splitAt).every((s) => s.census.running.length >= 3 || s.census.silent.length > 0), 'the count fell below 3');
    figures.add('3 split 2/3', 'running per side before the heal', sides.join(' + '));
    figures.add('3 split 2/3', 'largest count', census.maxRunning(WEB, splitAt));
    figures.add('3 split 2/3', 'heal -> exactly 3', Figures.seconds(healedAt, done.at));
    figures.add('3 split 2/3', 'installs trimmed', trimmed(log, WEB, splitAt));
    console.log(`      (before the heal ${sides.join(' + ')} ran it; exactly 3 (${done.census.running.join(', ')}) ${Figures.seconds(healedAt, done.at)} after it)`);
  });

  it('6c. an app whose image cannot be pulled: error notices on every node, and at most one install attempt per back-off on each', async () => {
    const now = Date.now();
    await eventually(async () => (await Promise.all(nodes().map(async (n) => (data(await n.get(`/apps/installingerrorslocation/${NOPULL}`)) as unknown[]).length))).every((l) => l > 0), {
      what: 'the error notices on every node',
      everyMs: 500,
      timeoutMs: 30_000,
    });
    const errors = data(await tb.node('pub3').get(`/apps/installingerrorslocation/${NOPULL}`)) as { ip: string; error: string }[];
    assert.ok(errors.every((e) => /absent|manifest|not found|pull/i.test(e.error)), JSON.stringify(errors));
    const attempts = installAttempts(log, NOPULL, nopullPaid.confirmedAt, now);
    const window = now - nopullPaid.confirmedAt;
    for (const [node, at] of attempts) {
      // The k-th wait is the base doubled k-1 times; a little slack for the loop's 2 s tick.
      for (let k = 1; k < at.length; k++) assert.ok(at[k] - at[k - 1] >= BACKOFF_MS * 2 ** (k - 1) - 5_000, `${node} tried again after ${at[k] - at[k - 1]} ms (attempt ${k + 1})`);
    }
    assert.ok(attempts.size >= 3, `only ${[...attempts.keys()]} tried it`);
    assert.ok(!attempts.has('small'), 'the node without room tried it');
    assert.equal(census.maxRunning(NOPULL, nopullPaid.confirmedAt), 0);
    const counts = [...attempts].map(([n, a]) => `${n} ${a.length}`).join(', ');
    figures.add('6 unpullable', `attempts in ${(window / 1000).toFixed(0)} s`, counts);
    console.log(`      (attempts over ${(window / 1000).toFixed(0)} s: ${counts})`);
  });

  it('5. the chain passes the app’s expire: every node removes it within 2 blocks', async () => {
    const expireAt = web.height + WEB_EXPIRE;
    const ltc = tb.chain.ltc;
    const height = await ltc.rpc.call<number>('getblockcount', []);
    if (height < expireAt - 1) await ltc.mine(expireAt - 1 - height);
    const scanned = (h: number) => eventually(async () => (await Promise.all(nodes().map(async (n) => data(await n.get('/explorer/scannedheight')).generalScannedHeight as number))).every((s) => s >= h), { what: `every node scanned ${h}`, everyMs: 300, timeoutMs: 30_000 });
    await scanned(expireAt - 1);
    const stillThere = await census.until(WEB, () => true, { timeoutMs: 5_000, what: 'a census' });
    assert.equal(stillThere.census.running.length, 3, `one block before its expiry: ${JSON.stringify(stillThere.census)}`);
    const gone = (c: { running: string[]; installed: string[]; silent: string[] }) => !c.running.length && !c.installed.length && !c.silent.length;
    let blocks = 0;
    let removed;
    const firstBlockAt = Date.now();
    while (!removed && blocks < 2) {
      await ltc.mine(1);
      blocks++;
      removed = await census.until(WEB, gone, { timeoutMs: 20_000, what: 'removed everywhere' }).catch(() => undefined);
    }
    assert.ok(removed, `still there ${blocks} blocks past its expiry: ${JSON.stringify(census.latest(WEB))}`);
    const expired = log.named('apps.removed', WEB).filter((e) => e.data?.reason === 'expired').map((e) => e.node).sort();
    assert.deepEqual(expired, stillThere.census.running);
    figures.add('5 expiry', 'blocks past expire -> removed everywhere', blocks);
    figures.add('5 expiry', 'first block -> removed everywhere', Figures.seconds(firstBlockAt, removed.at));
    console.log(`      (removed everywhere ${blocks} block(s) and ${Figures.seconds(firstBlockAt, removed.at)} after the expiry height)`);
  });

  it('4. a g: app: its primary’s node cut off, the standby with the data takes over and serves the file written before the cut', async () => {
    // home1's operator turns placement off first (scenario 6 checks it never took this app).
    const home1 = tb.node('home1');
    assert.match(data(await home1.post('/apps/placement', { enabled: false }, await auth(home1))).message, /disabled/);
    offWindows.push({ node: 'home1', app: GAPP, from: Date.now(), to: Infinity });
    const spec = {
      ...v8Spec(owner.legacyid, GAPP, [component('files', apps.image, GAPP_PORT, 8080, { containerData: 'g:/data', commands: serveOnSigterm('/data') })]),
      instances: 2,
    };
    const paid = await registerAndPay(tb, tb.node('pub1'), owner, apps.registryAddress, spec);
    const two = await census.until(GAPP, (c) => c.installed.length === 2 && c.running.length === 1, { since: paid.confirmedAt, timeoutMs: 120_000, what: 'a primary and a standby' });
    const [primary] = two.census.running;
    const standby = two.census.installed.find((n) => n !== primary)!;
    figures.add('4 g: app', 'confirmation -> primary and standby', Figures.seconds(paid.confirmedAt, two.at));

    // Written by the app's owner inside the primary's container, served by its httpd.
    const p = tb.node(primary);
    const exec = await p.post('/apps/appexec', { appname: GAPP, cmd: 'echo written before the cut > /data/marker.txt' }, await asOwner(p));
    assert.equal(exec.status, 200, exec.text);
    await eventually(async () => (await page(primary, GAPP_PORT, '/marker.txt'))?.body === 'written before the cut\n', { what: 'the file on the primary', everyMs: 500, timeoutMs: 20_000 });
    const copy = path.join(tb.node(standby).dataDir, 'apps', 'mounts', `corefiles_${GAPP}`, 'appdata', 'marker.txt');
    await eventually(() => fs.existsSync(copy) && fs.readFileSync(copy, 'utf8') === 'written before the cut\n', { what: 'the file in the standby’s copy', everyMs: 500, timeoutMs: 60_000 });

    const cutAt = Date.now();
    tb.cut(primary);
    let serving = 0;
    try {
      await census.until(GAPP, (c) => c.running.includes(standby), { since: cutAt, timeoutMs: 90_000, what: `${standby} running it after ${primary} was cut off` });
      await eventually(async () => (await page(standby, GAPP_PORT, '/marker.txt'))?.body === 'written before the cut\n', { what: `the file served by ${standby}`, everyMs: 500, timeoutMs: 30_000 });
      serving = Date.now();
      // Not the scenario, a figure: what the new primary is given during the cut, after the heal.
      const s = tb.node(standby);
      assert.equal((await s.post('/apps/appexec', { appname: GAPP, cmd: 'echo written during the cut > /data/during.txt' }, await asOwner(s))).status, 200);
    } finally {
      tb.heal(primary);
    }
    const healedAt = Date.now();
    figures.add('4 g: app', 'primary cut -> standby serving the file', Figures.seconds(cutAt, serving));
    // Back from the cut, one primary again (filesync: the earlier election stays, the other steps down).
    const one = await census.until(GAPP, (c) => c.running.length === 1 && c.silent.length === 0, { since: healedAt, timeoutMs: 60_000, what: 'one primary after the heal' });
    figures.add('4 g: app', 'heal -> one primary', Figures.seconds(healedAt, one.at));
    const [after] = one.census.running;
    const kept = await eventually(async () => (await page(after, GAPP_PORT, '/during.txt'))?.body === 'written during the cut\n', { everyMs: 1000, timeoutMs: 20_000 }).catch(() => false);
    figures.add('4 g: app', 'file written during the cut, after the heal', `${kept ? 'served' : 'not served'} by the one primary (${after})`);
    console.log(`      (${primary} cut off; ${standby} served the file ${Figures.seconds(cutAt, serving)} later; after the heal ${after} runs it)`);
  });

  it('6. the node without room never took an app; a node whose operator turned placement off never took the app meanwhile', async () => {
    const small = tb.node('small');
    assert.deepEqual(log.where((e) => e.node === 'small' && e.name === 'apps.installing'), [], 'small announced or attempted an install');
    assert.ok(census.samples.every((s) => !s.nodes.get('small') || s.nodes.get('small')!.installed.size === 0), 'small had an app installed');
    const why = data(await small.post('/apps/placementfeasibility', { name: GAPP }, await asOwner(small)));
    assert.equal(why.feasible, false);
    assert.ok(why.checks.some((c: any) => c.check === 'resources.cpu' && !c.ok), JSON.stringify(why.checks));

    for (const w of offWindows) {
      const during = (at: number) => at >= w.from && at <= w.to;
      assert.deepEqual(log.where((e) => e.node === w.node && e.name === 'apps.installing' && e.data?.app === w.app && during(e.at)), [], `${w.node} announced or attempted ${w.app} with placement off`);
      assert.ok(census.samples.filter((s) => during(s.at)).every((s) => !s.nodes.get(w.node)?.installed.has(w.app)), `${w.node} had ${w.app} installed with placement off`);
    }
    const home1 = tb.node('home1');
    assert.equal(data(await home1.get('/apps/placement', await auth(home1))).inForce.enabled, false);
    const off = data(await home1.post('/apps/placementfeasibility', { name: GAPP }, await asOwner(home1)));
    assert.equal(off.placement.enabled, false);
    data(await home1.post('/apps/placement', { reset: true }, await auth(home1)));
    figures.add('all', 'file wall time', Figures.seconds(startedAt, Date.now()));
  });
});
