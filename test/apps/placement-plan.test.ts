/**
 * The placement planner (plugins/apps/placement-plan.ts), pure: several planners on a simulated notice board
 * (placement-sim.ts) on virtual time, and single rounds for the limits, the back-off and determinism.
 */
import assert from 'node:assert/strict';
import { DEFAULT_TIMING, EMPTY_STATE, plan, type AppHeard, type PlanInput } from '../../plugins/apps/placement-plan.ts';
import { backoffMs, delayOf, surplusNodes } from '../../plugins/apps/placement-rank.ts';
import { gapp, Sim } from './placement-sim.ts';

const MIN = 60_000;

describe('apps: placement planner', function () {
  it('cold start, 10 nodes all fit: exactly instances, never more at any time', () => {
    const sim = new Sim({ nodes: 10, apps: [gapp('a', 3)] });
    let at = 0;
    sim.run(2 * MIN, () => (at ||= sim.running('a').length === 3 ? sim.t : 0));
    assert.equal(sim.running('a').length, 3);
    assert.equal(sim.maxRunning.a, 3, sim.log.join('\n'));
    console.log(`      (3 instances running ${(at / 1000).toFixed(1)} s after a cold start, 10 s install)`);
  });

  it('cold start, 20 nodes and 6 apps: each app exactly its instances, no overshoot', () => {
    const apps = [gapp('a', 3), gapp('b', 3), gapp('c', 5), gapp('d', 4), gapp('e', 1), gapp('f', 10)];
    const sim = new Sim({ nodes: 20, apps, propagationMs: 500 });
    sim.run(5 * MIN);
    for (const a of apps) {
      assert.equal(sim.running(a.name).length, a.instances, a.name);
      assert.equal(sim.maxRunning[a.name], a.instances, a.name);
    }
  });

  it('few fit nodes: the fit ones install, a non-fit node never announces nor installs', () => {
    const fitOnes = new Set(['node-03', 'node-07']);
    const sim = new Sim({ nodes: 10, apps: [gapp('a', 3)], fit: (n) => fitOnes.has(n) });
    sim.run(3 * MIN);
    assert.deepEqual(sim.running('a').map((n) => n.key).sort(), [...fitOnes].sort());
    assert.ok(!sim.log.some((l) => !fitOnes.has(l.split(' ')[1])), sim.log.join('\n'));
  });

  it('notices delayed just under the settle time: still no overshoot', () => {
    const sim = new Sim({ nodes: 12, apps: [gapp('a', 3), gapp('b', 5)], propagationMs: 2_900 });
    sim.run(4 * MIN);
    assert.equal(sim.running('a').length, 3);
    assert.equal(sim.running('b').length, 5);
    assert.equal(sim.maxRunning.a, 3);
    assert.equal(sim.maxRunning.b, 5);
  });

  it('notices slower than the settle time: an overshoot, trimmed back to exactly instances', () => {
    const sim = new Sim({ nodes: 15, apps: [gapp('a', 3)], propagationMs: 8_000, seed: 'slow' });
    sim.run(5 * MIN);
    assert.equal(sim.running('a').length, 3, sim.log.join('\n'));
    console.log(`      (most running at once with 8 s notices: ${sim.maxRunning.a})`);
  });

  it('partition: each side places instances, after the merge the surplus is trimmed, never below instances', () => {
    const sim = new Sim({ nodes: 10, apps: [gapp('a', 3)], propagationMs: 400 });
    sim.partition([sim.nodes.slice(0, 5), sim.nodes.slice(5)]);
    sim.run(2 * MIN);
    assert.equal(sim.running('a').length, 6);
    const newest = sim.running('a').map((n) => ({ node: n.key, runningSince: n.installed[0].runningSince }));
    sim.merge();
    let least = Infinity;
    sim.run(4 * MIN, () => (least = Math.min(least, sim.running('a').length)));
    assert.equal(sim.running('a').length, 3);
    assert.equal(least, 3);
    // The three removed are the most recently started of the six.
    const removed = sim.log.filter((l) => l.includes('remove-surplus')).map((l) => l.split(' ')[1]);
    assert.deepEqual(removed.sort(), surplusNodes(newest, 3).sort());
  });

  it('a node that goes silent is replaced after goneAfterMs, within the 90 s goal', () => {
    const sim = new Sim({ nodes: 8, apps: [gapp('a', 3)] });
    sim.run(2 * MIN);
    const victim = sim.running('a')[0];
    victim.silent = true;
    const from = sim.t;
    let back = 0;
    sim.run(from + 3 * MIN, () => {
      if (!back && sim.running('a').length === 3) back = sim.t - from;
    });
    // Its last notice was sent up to one announcement period (15 s) before it went silent.
    assert.ok(back > DEFAULT_TIMING.goneAfterMs - 15_000 && back <= 90_000, `replaced after ${back} ms`);
    assert.ok(!sim.log.some((l) => Number(l.split(' ')[0]) < from + DEFAULT_TIMING.goneAfterMs - 15_000 && Number(l.split(' ')[0]) > from), 'nothing moved before the node was gone');
    assert.equal(sim.running('a').length, 3);
    console.log(`      (replacement running ${(back / 1000).toFixed(1)} s after the node went silent, 10 s install)`);
  });

  it('expired apps are removed everywhere and not placed again', () => {
    const sim = new Sim({ nodes: 6, apps: [gapp('a', 3, { expireHeight: 500 }), gapp('b', 2)] });
    sim.run(2 * MIN);
    assert.equal(sim.running('a').length, 3);
    sim.height = 500;
    sim.run(sim.t + 5_000);
    assert.equal(sim.running('a').length, 0);
    assert.equal(sim.running('b').length, 2);
    sim.run(sim.t + 2 * MIN);
    assert.equal(sim.running('a').length, 0);
    assert.equal(sim.log.filter((l) => l.includes('remove-expired')).length, 3);
  });

  it('back-off after failed installs: 1 min doubling, then the app is taken once it installs', () => {
    const attempts: number[] = [];
    const sim = new Sim({ nodes: 3, apps: [gapp('a', 1)], stepMs: 500, fit: (n) => n === 'node-01', fails: (_n, _a, now) => (attempts.push(now), now < 20 * MIN ? 'pull access denied' : null) });
    sim.run(40 * MIN);
    const gaps = attempts.slice(1).map((t, i) => t - attempts[i]);
    // Each gap is the back-off plus the delay, settle and pull (at most ~25 s).
    for (const [i, g] of gaps.entries()) {
      const b = backoffMs(i + 1, MIN, 60 * MIN);
      assert.ok(g >= b && g <= b + 30_000, `gap ${i}: ${g} ms for a ${b} ms back-off`);
    }
    assert.ok(attempts.length >= 4 && attempts.length <= 6, `${attempts.length} attempts`);
    assert.equal(sim.running('a').length, 1);
    assert.equal(backoffMs(1, MIN, 60 * MIN), MIN);
    assert.equal(backoffMs(3, MIN, 60 * MIN), 4 * MIN);
    assert.equal(backoffMs(50, MIN, 60 * MIN), 60 * MIN);
  });

  it('g: apps install one node at a time and still reach instances', () => {
    const sim = new Sim({ nodes: 10, apps: [gapp('g', 4, { gSync: true })] });
    sim.run(4 * MIN);
    assert.equal(sim.running('g').length, 4);
    assert.equal(sim.maxPulling.g, 1);
  });

  describe('one round', () => {
    const running = (n: number, since = 0): AppHeard => ({ running: Array.from({ length: n }, (_, i) => ({ node: `peer-${i}`, runningSince: since + i, heardAt: 1_000_000 })), installing: [], errors: [] });
    const base = (over: Partial<PlanInput> = {}): PlanInput => ({
      self: 'self', now: 1_000_000, seed: 's', height: 100, apps: [gapp('a', 3)], heard: new Map(), installed: [], fit: () => ({ ok: true, reasons: [] }), limits: { enabled: true, maxApps: 10 }, failures: {}, ...over,
    });

    it('disabled: takes nothing new and removes nothing; the surplus is trimmed by the nodes that take part', () => {
      const input = base({ limits: { enabled: false, maxApps: 10 }, heard: new Map([['a', running(3)], ['b', running(1)]]), apps: [gapp('a', 3), gapp('b', 3)], installed: [{ name: 'a', hash: 'h', runningSince: 999_000 }] });
      const r1 = plan(input, EMPTY_STATE);
      assert.deepEqual(r1.actions.map((a) => [a.kind, a.app]), [['wait', 'b']]);
      assert.match((r1.actions[0] as { why: string }).why, /disabled/);
      const r2 = plan({ ...input, now: input.now + DEFAULT_TIMING.settleMs }, r1.state);
      assert.ok(!r2.actions.some((a) => a.kind === 'remove-surplus'), JSON.stringify(r2.actions));
      // The newest enabled node (peer-2) goes instead: every node ranks the fixed one out.
      const asPeer2 = base({ self: 'peer-2', heard: new Map([['a', { running: [...running(2).running, { node: 'self', runningSince: 999_000, heardAt: 1_000_000, fixed: true }], installing: [], errors: [] }]]), installed: [{ name: 'a', hash: 'h', runningSince: 2 }] });
      const p1 = plan(asPeer2, EMPTY_STATE);
      const p2 = plan({ ...asPeer2, now: asPeer2.now + DEFAULT_TIMING.settleMs }, p1.state);
      assert.deepEqual(p2.actions.map((a) => [a.kind, a.app]), [['remove-surplus', 'a']]);
      assert.deepEqual(surplusNodes([{ node: 'x', runningSince: 9, fixed: true }, { node: 'y', runningSince: 5 }], 2), []);
    });

    it('an older instance here is not surplus: the newest ones go', () => {
      assert.deepEqual(surplusNodes([{ node: 'x', runningSince: 5 }, { node: 'y', runningSince: 9 }, { node: 'z', runningSince: 9 }, { node: 'w', runningSince: 1 }], 2), ['z', 'y']);
      const r = plan(base({ heard: new Map([['a', running(3, 2_000)]]), installed: [{ name: 'a', hash: 'h', runningSince: 1 }] }), EMPTY_STATE);
      assert.deepEqual(r.actions, []);
    });

    it('maxApps and the claim slot limit new claims; a gone node does not count', () => {
      const apps = [gapp('a', 3), gapp('b', 3)];
      const full = plan(base({ apps, limits: { enabled: true, maxApps: 1 }, installed: [{ name: 'x', hash: 'h', runningSince: 0 }] }), EMPTY_STATE);
      assert.ok(full.actions.every((a) => a.kind === 'wait' && /maxApps/.test(a.why)));
      const gone: AppHeard = { ...running(3), running: running(3).running.map((r) => ({ ...r, heardAt: 1_000_000 - DEFAULT_TIMING.goneAfterMs - 1 })) };
      const r = plan(base({ apps, heard: new Map([['a', gone]]) }), EMPTY_STATE);
      assert.equal(Object.keys(r.state.claims).length, 1);
      assert.ok(r.actions.some((a) => a.kind === 'wait' && /claim slot/.test(a.why)));
    });

    it('a non-fit node says why and claims nothing', () => {
      const r = plan(base({ fit: () => ({ ok: false, reasons: ['needs 4 cores, 1.5 left'] }) }), EMPTY_STATE);
      assert.deepEqual(r.state.claims, {});
      assert.match((r.actions[0] as { why: string }).why, /not fit: needs 4 cores/);
    });

    it('deterministic: the same inputs and seed give the same actions; delays differ per node and seed', () => {
      const input = base({ heard: new Map([['a', running(1)]]) });
      assert.deepEqual(plan(input, EMPTY_STATE), plan(input, EMPTY_STATE));
      const delays = ['n1', 'n2', 'n3', 'n4'].map((n) => delayOf('s', n, 'a', 10_000));
      assert.equal(new Set(delays).size, 4);
      assert.notEqual(delayOf('s', 'n1', 'a', 10_000), delayOf('t', 'n1', 'a', 10_000));
      const logOf = () => {
        const sim = new Sim({ nodes: 10, apps: [gapp('a', 3), gapp('b', 2)], propagationMs: 5_000 });
        sim.run(3 * MIN);
        return sim.log;
      };
      assert.deepEqual(logOf(), logOf());
    });
  });

  it('benchmark: one round with 200 global apps and 50 nodes heard (printed, not asserted)', () => {
    const apps = Array.from({ length: 200 }, (_, i) => gapp(`app${i}`, 3 + (i % 5)));
    const now = 10_000_000;
    const heard = new Map<string, AppHeard>();
    for (const [i, a] of apps.entries())
      heard.set(a.name, {
        running: Array.from({ length: a.instances }, (_, k) => ({ node: `node-${(i * 7 + k * 13) % 50}`, runningSince: now - 3_600_000 + k, heardAt: now - (k * 1000) % 15_000 })),
        installing: i % 10 === 0 ? [{ node: `node-${i % 50}`, announcedAt: now - 2_000, heardAt: now - 2_000 }] : [],
        errors: [],
      });
    const installed = apps.filter((_, i) => i % 25 === 0).map((a) => ({ name: a.name, hash: a.hash, runningSince: now - 1000 }));
    const input: PlanInput = { self: 'node-00', now, seed: 's', height: 100, apps, heard, installed, fit: () => ({ ok: true, reasons: [] }), limits: { enabled: true, maxApps: 50 }, failures: {} };
    let state = EMPTY_STATE;
    for (let i = 0; i < 200; i++) state = plan({ ...input, now: now + i }, state).state; // warm-up
    const rounds = 1000;
    const cpu0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < rounds; i++) plan({ ...input, now: now + i }, state);
    const wallMs = Number(process.hrtime.bigint() - t0) / 1e6 / rounds;
    const c = process.cpuUsage(cpu0);
    const cpuMs = (c.user + c.system) / 1000 / rounds;
    console.log(`      (one round: ${cpuMs.toFixed(3)} ms CPU, ${wallMs.toFixed(3)} ms wall; at one round per 5 s: ${((cpuMs / 5000) * 100).toFixed(4)} % of one core)`);
  });
});
