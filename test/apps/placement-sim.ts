/**
 * Several placement planners on virtual time, sharing an in-memory notice board with a propagation delay
 * (no timers, no transport): each node announces what it runs every `announceMs` and on change, plans every
 * `roundMs`, and acts on its actions as the wiring would (notices; a pull that takes `installMs`).
 * Partitions deliver only within a group; a silent node neither sends nor plans (a crash).
 */
import { EMPTY_STATE, plan, recordFailure, recordSuccess, type Action, type AppHeard, type Failure, type GlobalAppFact, type InstalledHere, type Limits, type PlannerState, type Timing } from '../../plugins/apps/placement-plan.ts';

type Notice =
  | { type: 'running'; apps: { name: string; runningSince: number }[] }
  | { type: 'installing'; app: string; announcedAt: number }
  | { type: 'removed'; app: string }
  | { type: 'error'; app: string };

interface View { running: Map<string, { runningSince: number; heardAt: number }>; installing: Map<string, { announcedAt: number; heardAt: number }> }

export interface SimOptions {
  nodes: number;
  apps: GlobalAppFact[];
  propagationMs?: number;
  roundMs?: number;
  announceMs?: number;
  installMs?: number;
  stepMs?: number;
  seed?: string;
  timing?: Timing;
  fit?: (node: string, app: GlobalAppFact) => boolean;
  /** An error message when this install fails. */
  fails?: (node: string, app: string, now: number) => string | null;
  limits?: (node: string) => Limits;
}

export class SimNode {
  state: PlannerState = EMPTY_STATE;
  installed: InstalledHere[] = [];
  failures: Record<string, Failure> = {};
  readonly views = new Map<string, View>();
  readonly pulling = new Map<string, number>();
  silent = false;
  nextAnnounce = 0;
  constructor(readonly key: string, readonly offset: number) {}
  view(app: string): View {
    let v = this.views.get(app);
    if (!v) this.views.set(app, (v = { running: new Map(), installing: new Map() }));
    return v;
  }
}

export class Sim {
  t = 0;
  height = 100;
  readonly nodes: SimNode[];
  readonly log: string[] = [];
  /** The most live nodes that ran each app at once, and the most pulling it at once. */
  readonly maxRunning: Record<string, number> = {};
  readonly maxPulling: Record<string, number> = {};
  private queue: { at: number; to: SimNode; from: string; sentAt: number; n: Notice }[] = [];
  private groups: Map<string, number> | null = null;
  readonly o: Required<Omit<SimOptions, 'fails' | 'limits' | 'timing'>> & SimOptions;

  constructor(opts: SimOptions) {
    this.o = { propagationMs: 300, roundMs: 2000, announceMs: 15_000, installMs: 10_000, stepMs: 100, seed: 'seed', fit: () => true, ...opts };
    // Keys sort in index order; the round offsets spread the nodes' rounds over the round period.
    const slots = this.o.roundMs / this.o.stepMs;
    this.nodes = Array.from({ length: opts.nodes }, (_, i) => new SimNode(`node-${String(i).padStart(2, '0')}`, ((i * 7) % slots) * this.o.stepMs));
  }

  partition(groups: SimNode[][]): void {
    this.groups = new Map(groups.flatMap((g, i) => g.map((n) => [n.key, i] as [string, number])));
  }
  merge(): void {
    this.groups = null;
  }

  /** Live nodes running `app` now (a silent node's instance does not serve). */
  running(app: string): SimNode[] {
    return this.nodes.filter((n) => !n.silent && n.installed.some((a) => a.name === app));
  }

  run(untilMs: number, each?: () => void): void {
    while (this.t < untilMs) {
      this.t += this.o.stepMs;
      this.deliver();
      for (const n of this.nodes) if (!n.silent) this.tick(n);
      for (const a of this.o.apps) {
        this.maxRunning[a.name] = Math.max(this.maxRunning[a.name] ?? 0, this.running(a.name).length);
        this.maxPulling[a.name] = Math.max(this.maxPulling[a.name] ?? 0, this.nodes.filter((n) => !n.silent && n.pulling.has(a.name)).length);
      }
      each?.();
    }
  }

  private send(from: SimNode, n: Notice): void {
    for (const to of this.nodes) {
      if (to === from || (this.groups && this.groups.get(to.key) !== this.groups.get(from.key))) continue;
      this.queue.push({ at: this.t + this.o.propagationMs, to, from: from.key, sentAt: this.t, n });
    }
  }

  private deliver(): void {
    const due = this.queue.filter((q) => q.at <= this.t);
    if (!due.length) return;
    this.queue = this.queue.filter((q) => q.at > this.t);
    for (const { to, from, sentAt, n } of due) {
      if (n.type === 'running') {
        for (const [app, v] of to.views) if (!n.apps.some((a) => a.name === app)) v.running.delete(from);
        for (const a of n.apps) {
          to.view(a.name).running.set(from, { runningSince: a.runningSince, heardAt: sentAt });
          to.view(a.name).installing.delete(from);
        }
      } else if (n.type === 'installing') to.view(n.app).installing.set(from, { announcedAt: n.announcedAt, heardAt: sentAt });
      else {
        to.view(n.app).installing.delete(from);
        if (n.type === 'removed') to.view(n.app).running.delete(from);
      }
    }
  }

  private announce(n: SimNode): void {
    this.send(n, { type: 'running', apps: n.installed.map((a) => ({ name: a.name, runningSince: a.runningSince })) });
    for (const [app, c] of Object.entries(n.state.claims)) if (c.phase !== 'delay') this.send(n, { type: 'installing', app, announcedAt: c.announcedAt });
  }

  private tick(n: SimNode): void {
    if (this.t >= n.nextAnnounce) {
      this.announce(n);
      n.nextAnnounce = this.t + this.o.announceMs;
    }
    for (const [app, at] of n.pulling) {
      if (at > this.t) continue;
      n.pulling.delete(app);
      const err = this.o.fails?.(n.key, app, this.t) ?? null;
      if (err) {
        n.failures = recordFailure(n.failures, app, this.t, err);
        this.log.push(`${this.t} ${n.key} failed ${app}`);
        this.send(n, { type: 'error', app });
      } else {
        n.failures = recordSuccess(n.failures, app);
        n.installed.push({ name: app, hash: 'h', runningSince: this.t });
        this.log.push(`${this.t} ${n.key} installed ${app}`);
        this.announce(n);
      }
    }
    if ((this.t - n.offset) % this.o.roundMs !== 0) return;
    const heard = new Map<string, AppHeard>();
    for (const [app, v] of n.views)
      heard.set(app, {
        running: [...v.running].map(([node, r]) => ({ node, ...r })),
        installing: [...v.installing].map(([node, i]) => ({ node, ...i })),
        errors: [],
      });
    const limits = this.o.limits?.(n.key) ?? { enabled: true, maxApps: 100 };
    const out = plan({ self: n.key, now: this.t, seed: this.o.seed, height: this.height, apps: this.o.apps, heard, installed: n.installed, fit: (a) => ({ ok: this.o.fit(n.key, a), reasons: ['unfit in this test'] }), limits, failures: n.failures, timing: this.o.timing }, n.state);
    n.state = out.state;
    for (const a of out.actions) this.act(n, a);
  }

  private act(n: SimNode, a: Action): void {
    if (a.kind === 'wait') return;
    this.log.push(`${this.t} ${n.key} ${a.kind} ${a.app}`);
    if (a.kind === 'announce-installing') this.send(n, { type: 'installing', app: a.app, announcedAt: a.announcedAt });
    else if (a.kind === 'install') n.pulling.set(a.app, this.t + this.o.installMs);
    else if (a.kind === 'stand-down') this.send(n, { type: 'removed', app: a.app });
    else {
      n.installed = n.installed.filter((x) => x.name !== a.app);
      n.pulling.delete(a.app);
      this.send(n, { type: 'removed', app: a.app });
    }
  }
}

export const gapp = (name: string, instances: number, more: Partial<GlobalAppFact> = {}): GlobalAppFact => ({ name, hash: `hash-${name}`, instances, expireHeight: 10_000, owner: 'owner', gSync: false, ...more });
