/**
 * The placement loop: every `tickMs` it gathers what this node knows (the global specifications, the
 * locations the peer network heard, what is installed here, the chain height), asks the planner
 * (placement-plan.ts, whose header gives the rules) what to do, and does it: notices through the event
 * bus (the peers plugin turns `apps.installing` and `apps.standdown` into network notices), installs and
 * removals through the routes' own handlers (so they take the installer's slot, stream and emit as a
 * hand-made install does). Every decision is logged with its reason and emitted as `apps.placement`.
 *
 * Without the peer network a node places nothing: it cannot know who else runs an app, and installing
 * every paid app on a lone node would overshoot every count. For the same reason a node plans only once it
 * has had peers for `warmupMs` (longer than a round of running notices, `peers.announceMs`): a node just
 * started or just back from a cut has not yet heard who runs what.
 *
 * Whether this node fits an app costs port probes and policy lookups, so the planner's (synchronous) fit
 * reads a cache filled between ticks: an app seen for the first time waits one tick.
 */
import type { Log } from '../../core/plugin-api.ts';
import type { AppsHeard, PeerNetwork } from '../peers/api.ts';
import { DEFAULT_TIMING, EMPTY_STATE, plan, recordFailure, recordSuccess, type Action, type Failure, type GlobalAppFact, type PlannerState, type Timing } from './placement-plan.ts';
import type { Resources } from './placement-fit.ts';
import type { GlobalSpec } from './registry.ts';

export interface PlacementLimits {
  enabled: boolean;
  maxApps: number;
  maxResources: Resources;
}

export interface PlacementConfig extends PlacementLimits, Timing {
  tickMs: number;
  /** How often an install this node announced is announced again while it lasts (a notice lives `peers.locationTtlMs`). */
  reannounceMs: number;
  /** How long a fit verdict is used before it is checked again (ports and resources change). */
  fitCacheMs: number;
  /** How long the node must have had peers before it plans (its view of who runs what is filled by then). */
  warmupMs: number;
}

export interface Decision {
  at: number;
  app: string;
  action: Action['kind'];
  why: string;
}

export interface Verdict { ok: boolean; reasons: string[] }

export interface LoopDeps {
  config: PlacementConfig;
  /** The operator's limits now (config, or what the admin route set). */
  limits: () => PlacementLimits;
  peers: () => PeerNetwork | undefined;
  globals: () => Promise<GlobalSpec[]>;
  installed: () => Promise<{ name: string; hash: string; installedAt: number }[]>;
  height: () => number | null;
  /** Whether this node fits the app now (the placement checks). */
  fit: (g: GlobalSpec, heard: AppsHeard, self: string, address: string) => Promise<Verdict>;
  install: (app: string) => Promise<void>;
  remove: (app: string) => Promise<void>;
  emit: (name: string, data: Record<string, unknown>) => void;
  now: () => number;
  log: Log;
}

const CHECKING = 'checking whether this node fits';
const G_DATA = /^[a-z]*g[a-z]*:\//;
const isBusy = (e: unknown) => (e as { code?: number; status?: number })?.code === 409 || (e as { status?: number })?.status === 409;

export class PlacementLoop {
  private state: PlannerState = EMPTY_STATE;
  private failures: Record<string, Failure> = {};
  private readonly fits = new Map<string, { key: string; at: number; verdict: Verdict }>();
  private readonly toCheck = new Map<string, GlobalSpec>();
  private readonly lastWhy = new Map<string, string>();
  private readonly announced = new Map<string, number>();
  readonly decisions: Decision[] = [];
  private timer?: NodeJS.Timeout;
  private ticking?: Promise<void>;
  private work?: Promise<void>;
  private stopped = false;
  /** The last tick's facts (for the admin route and the feasibility route). */
  last: { at: number; apps: number; height: number | null; network: boolean; waiting?: string } = { at: 0, apps: 0, height: null, network: false };
  private linkedSince?: number;

  constructor(private readonly d: LoopDeps) {}

  start() {
    const loop = () => {
      if (this.stopped) return;
      this.ticking = this.tick()
        .catch((e) => this.d.log.warn({ err: (e as Error).message }, 'apps: a placement round failed'))
        .finally(() => {
          if (this.stopped) return;
          this.timer = setTimeout(loop, this.d.config.tickMs);
          this.timer.unref();
        });
    };
    this.timer = setTimeout(loop, this.d.config.tickMs);
    this.timer.unref();
  }

  async stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    await this.work;
  }

  /** The claims in progress and the failures remembered (for `GET /apps/placement`). */
  view() {
    return { claims: this.state.claims, failures: this.failures, surplus: this.state.surplusSince, last: this.last };
  }

  /** The reason of the last decision about an app, if any. */
  lastDecision(app: string): Decision | undefined {
    for (let i = this.decisions.length - 1; i >= 0; i--) if (this.decisions[i].app === app) return this.decisions[i];
    return undefined;
  }

  async tick(): Promise<void> {
    const net = this.d.peers();
    const now = this.d.now();
    const height = this.d.height();
    if (!net) {
      this.last = { at: now, apps: 0, height, network: false, waiting: 'the peer network is not enabled on this node' };
      return;
    }
    if (!net.links().length) this.linkedSince = undefined;
    else this.linkedSince ??= now;
    if (this.linkedSince === undefined || now - this.linkedSince < this.d.config.warmupMs) {
      this.last = { at: now, apps: 0, height, network: true, waiting: this.linkedSince === undefined ? 'no peers: this node cannot know where apps run' : 'hearing the network before planning' };
      return;
    }
    const [globals, installed] = await Promise.all([this.d.globals(), this.d.installed()]);
    const heard = net.heard();
    const byName = new Map(globals.map((g) => [g.name, g]));
    const apps: GlobalAppFact[] = [];
    for (const g of globals) {
      const raw = g.appSpecification;
      apps.push({
        name: g.name,
        hash: g.hash,
        instances: Number.isInteger(raw.instances) ? raw.instances : 3,
        expireHeight: g.expireHeight,
        owner: g.owner,
        gSync: (raw.version >= 4 ? raw.compose : [raw]).some((c: any) => G_DATA.test(String(c?.containerData ?? '').split('|')[0].trim())),
      });
    }
    this.last = { at: now, apps: apps.length, height, network: true };
    const installedKey = installed.map((a) => a.name).sort().join(',');
    const fit = (a: GlobalAppFact): Verdict => {
      const key = `${a.hash}|${installedKey}`;
      const f = this.fits.get(a.name);
      if (f && f.key === key && now - f.at < this.d.config.fitCacheMs) return f.verdict;
      this.toCheck.set(a.name, byName.get(a.name)!);
      return { ok: false, reasons: [CHECKING] };
    };
    const limits = this.d.limits();
    const { actions, state } = plan(
      {
        self: net.nodeKey,
        now,
        seed: String(height ?? 0),
        height: height ?? -1,
        apps,
        heard,
        installed: installed.map((a) => ({ name: a.name, hash: a.hash, runningSince: a.installedAt })),
        fit,
        limits: { enabled: limits.enabled, maxApps: limits.maxApps },
        failures: this.failures,
        timing: this.d.config,
      },
      this.state,
    );
    this.state = state;
    for (const a of actions) this.act(a, now);
    this.reannounce(now);
    // Fit verdicts for the next tick (one at a time: each probes ports).
    const address = net.address();
    for (const [name, g] of this.toCheck) {
      this.toCheck.delete(name);
      if (!g) continue;
      const verdict = await this.d.fit(g, heard, net.nodeKey, address).catch((e) => ({ ok: false, reasons: [`the checks failed: ${(e as Error).message}`] }));
      this.fits.set(name, { key: `${g.hash}|${installedKey}`, at: this.d.now(), verdict });
    }
    for (const name of this.fits.keys()) if (!byName.has(name)) this.fits.delete(name);
  }

  private act(a: Action, now: number) {
    this.decide(a, now);
    switch (a.kind) {
      case 'announce-installing':
        this.announced.set(a.app, now);
        this.d.emit('apps.installing', { app: a.app, hash: a.hash, announcedAt: a.announcedAt, placement: true });
        return;
      case 'stand-down':
        this.announced.delete(a.app);
        this.d.emit('apps.standdown', { app: a.app });
        return;
      case 'install':
        this.run(a.app, async () => {
          try {
            await this.d.install(a.app);
            this.failures = recordSuccess(this.failures, a.app);
          } catch (e) {
            if (isBusy(e)) {
              // The installer's slot was busy (a hand-made install or removal): the claim stays announced
              // and asks again at the next tick; not a failure of the app.
              const c = this.state.claims[a.app];
              if (c?.phase === 'pulling') this.state = { ...this.state, claims: { ...this.state.claims, [a.app]: { phase: 'announced', announcedAt: c.announcedAt } } };
              return;
            }
            this.failures = recordFailure(this.failures, a.app, this.d.now(), (e as Error).message.slice(0, 300));
            this.d.log.warn({ app: a.app, err: (e as Error).message, failures: this.failures[a.app].count }, 'apps: placement: the install failed; backing off');
          } finally {
            this.announced.delete(a.app);
          }
        });
        return;
      case 'remove-surplus':
        this.run(a.app, () => this.d.remove(a.app).catch((e) => void this.d.log.warn({ app: a.app, err: (e as Error).message }, 'apps: placement: removing a surplus instance failed')));
        return;
      case 'remove-expired':
        // The updater removes expired apps (updates.ts) on its round; the planner has dropped the claim.
        return;
      case 'wait':
        return;
    }
  }

  /** One install or removal at a time (the installer has one slot); a tick that finds it busy acts later. */
  private run(app: string, fn: () => Promise<void>) {
    if (this.work) {
      const c = this.state.claims[app];
      if (c?.phase === 'pulling') this.state = { ...this.state, claims: { ...this.state.claims, [app]: { phase: 'announced', announcedAt: c.announcedAt } } };
      return;
    }
    this.work = fn().finally(() => {
      this.work = undefined;
    });
  }

  /** Keep the announcement of an install alive while it lasts (long pulls outlive a notice's TTL). */
  private reannounce(now: number) {
    for (const [app, c] of Object.entries(this.state.claims)) {
      if (c.phase === 'delay') continue;
      const last = this.announced.get(app) ?? 0;
      if (now - last < this.d.config.reannounceMs) continue;
      this.announced.set(app, now);
      this.d.emit('apps.installing', { app, announcedAt: c.announcedAt, placement: true });
    }
  }

  /** Log and emit a decision when it differs from the last one about the app (waits repeat every tick). */
  private decide(a: Action, now: number) {
    const why = a.kind === 'wait' ? a.why : `${a.kind}: ${a.why}`;
    // A first look (the fit verdict comes at the next tick) is not a decision.
    if (this.lastWhy.get(a.app) === why || why.endsWith(CHECKING)) return;
    this.lastWhy.set(a.app, why);
    const d: Decision = { at: now, app: a.app, action: a.kind, why: a.why };
    this.decisions.push(d);
    if (this.decisions.length > 500) this.decisions.shift();
    if (a.kind === 'wait') this.d.log.debug({ app: a.app, why: a.why }, 'apps: placement');
    else this.d.log.info({ app: a.app, action: a.kind, why: a.why }, 'apps: placement');
    this.d.emit('apps.placement', { app: a.app, action: a.kind, why: a.why });
  }
}

export { DEFAULT_TIMING };
