/**
 * The placement planner: which global apps this node takes, stands down from or removes, decided from what
 * it knows (the permanent global specifications, the locations it heard, what it runs) and nothing else.
 * Pure: no transport, no clock (`now` is an input), no random source (the caller's `seed`), so the same
 * inputs give the same actions. A loop calls `plan` every few seconds and carries the returned `state` to
 * the next call; acting on the actions (notices, installer) is the caller's. Not wired into the node yet.
 *
 * Rules, with why:
 * 1. Liveness and deficit. A node is gone when its last notice is older than `goneAfterMs` (45 s: three
 *    missed 15 s announcements, far below the reference's hour, so a replacement starts within ~60 s and
 *    runs within the 90 s goal for a cached or small image). Deficit = instances - |running ∪ installing|
 *    over live nodes only; this node's own entries come from its installed list and its claims, not from
 *    its notices coming back.
 * 2. Randomised start, announce, settle. A fit node with a deficit and a free claim slot (one claim at a
 *    time by default: the installer has one slot) waits a delay drawn in [0, `delayWindowMs`) from (seed,
 *    node key, app), so fit nodes do not all move at once. When the delay ends and the deficit is still
 *    there (others' announcements heard meanwhile count), it checks the fit again and announces
 *    installing; then it waits `settleMs`, longer than a notice takes to travel, so every announcement made
 *    before its own has reached it. Then the **stand-down rule**: the slots are instances - running (one at
 *    most for a `g:` app); installers ranked by (first announcement time, then node key) beyond the slots
 *    stand down. Every node ranks the same announcements the same way, so exactly the slots' worth pull.
 *    The installing notice must carry its first announcement time: a re-announcement during a long pull
 *    keeps it alive but must not move the node down the ranking.
 * 3. Surplus. When more live nodes run an app than `instances` (a partition healed, a notice slower than the
 *    settle), the most recently started (ties: higher node key) `count - instances` remove theirs: the
 *    newest holds the least. A node acts only for itself, and only once the ranking has named it for
 *    `settleMs` in a row, so a view still filling in after a merge does not remove an instance it should
 *    not. Never below `instances` by construction; nodes with stale views trim late, not too much, as long
 *    as a gone node is not counted (rule 1).
 * 4. Expired (`height >= expireHeight`): removed wherever it is installed or claimed, whatever the limits.
 * 5. Back-off per app after a failed install (an image that cannot be pulled is one): `backoffBaseMs`
 *    doubling to `backoffMaxMs` (1 min to 1 h) from the last failure; the caller keeps the failure memory
 *    (`recordFailure`, `recordSuccess`). Other nodes' error notices do not back this node off: their
 *    failure may be theirs (disk, registry reachability).
 * 6. Limits. `enabled: false` takes nothing new, stands down from claims not yet pulling and removes
 *    nothing: an operator who turned placement off keeps what the node runs. Its running notices say so
 *    (`fixed`), and the surplus rule ranks only the nodes that take part, so a surplus is still trimmed,
 *    by the others. Expired apps are removed all the same (the updater, not this planner). `maxApps`
 *    counts installed apps and claims; resource limits are the fit function's business.
 * 7. `g:` apps (one primary, the others standbys syncing from it): one install at a time network-wide (no
 *    new claim while another node is installing, one slot at the stand-down), so each new standby syncs
 *    from the settled copies; the surplus rule removes the newest, the least likely primary.
 */
import { backoffMs, delayOf, standingDown, surplusNodes } from './placement-rank.ts';

export interface GlobalAppFact {
  name: string;
  hash: string;
  instances: number;
  /** The chain height from which the app has expired (registry `expireHeight`). */
  expireHeight: number;
  owner: string;
  /** A component's containerData says `g:` (one primary, standbys). */
  gSync: boolean;
}
export interface RunningAt {
  node: string;
  runningSince: number;
  heardAt: number;
  /** The node does not take part in placement (its operator turned it off): it keeps what it runs. */
  fixed?: boolean;
}
export interface InstallingAt { node: string; announcedAt: number; heardAt: number }
export interface ErrorAt { node: string; at: number; error: string }
export interface AppHeard { running: RunningAt[]; installing: InstallingAt[]; errors: ErrorAt[] }
export interface InstalledHere { name: string; hash: string; runningSince: number }
export type Fit = (app: GlobalAppFact) => { ok: boolean; reasons: string[] };
export interface Limits { enabled: boolean; maxApps: number; /** claims at once (default 1) */ maxClaims?: number }
export interface Failure { count: number; lastAt: number; error: string }
export interface Timing { goneAfterMs: number; delayWindowMs: number; settleMs: number; backoffBaseMs: number; backoffMaxMs: number }
export const DEFAULT_TIMING: Timing = { goneAfterMs: 45_000, delayWindowMs: 10_000, settleMs: 3_000, backoffBaseMs: 60_000, backoffMaxMs: 3_600_000 };

export type Claim =
  | { phase: 'delay'; until: number }
  | { phase: 'announced'; announcedAt: number }
  | { phase: 'pulling'; announcedAt: number; startedAt: number };
export interface PlannerState { claims: Record<string, Claim>; surplusSince: Record<string, number> }
export const EMPTY_STATE: PlannerState = { claims: {}, surplusSince: {} };

export interface PlanInput {
  self: string;
  now: number;
  seed: string;
  height: number;
  apps: readonly GlobalAppFact[];
  heard: ReadonlyMap<string, AppHeard>;
  installed: readonly InstalledHere[];
  fit: Fit;
  limits: Limits;
  failures: Readonly<Record<string, Failure>>;
  timing?: Timing;
}

export type Action =
  /** Broadcast "installing" with this first announcement time. */
  | { kind: 'announce-installing'; app: string; hash: string; announcedAt: number; why: string }
  /** Pull and install now (after the delay, the announcement and the settle). */
  | { kind: 'install'; app: string; hash: string; why: string }
  /** Withdraw the installing announcement (an `appremoved` notice). */
  | { kind: 'stand-down'; app: string; why: string }
  | { kind: 'remove-surplus'; app: string; why: string }
  | { kind: 'remove-expired'; app: string; why: string }
  | { kind: 'wait'; app: string; why: string; until?: number };

export function recordFailure(f: Readonly<Record<string, Failure>>, app: string, now: number, error: string): Record<string, Failure> {
  return { ...f, [app]: { count: (f[app]?.count ?? 0) + 1, lastAt: now, error } };
}
export function recordSuccess(f: Readonly<Record<string, Failure>>, app: string): Record<string, Failure> {
  const { [app]: _, ...rest } = f;
  return rest;
}

const NONE: AppHeard = { running: [], installing: [], errors: [] };

export function plan(input: PlanInput, prev: PlannerState): { actions: Action[]; state: PlannerState } {
  const { self, now, limits } = input;
  const t = input.timing ?? DEFAULT_TIMING;
  const claims: Record<string, Claim> = { ...prev.claims };
  const surplusSince: Record<string, number> = {};
  const actions: Action[] = [];
  const here = new Map(input.installed.map((a) => [a.name, a]));
  const cut = now - t.goneAfterMs;
  const candidates: { app: GlobalAppFact; deficit: number; delay: number }[] = [];

  for (const app of input.apps) {
    const mine = here.get(app.name);
    const claim = claims[app.name];
    if (input.height >= app.expireHeight) {
      if (mine || claim) actions.push({ kind: 'remove-expired', app: app.name, why: `expired at height ${app.expireHeight} (chain at ${input.height})` });
      delete claims[app.name];
      continue;
    }
    const h = input.heard.get(app.name) ?? NONE;
    const running: { node: string; runningSince: number; fixed?: boolean }[] = h.running.filter((r) => r.node !== self && r.heardAt >= cut);
    if (mine) running.push({ node: self, runningSince: mine.runningSince, fixed: !limits.enabled });
    const runs = new Set(running.map((r) => r.node));
    const installing: { node: string; announcedAt: number }[] = h.installing.filter((i) => i.node !== self && i.heardAt >= cut && !runs.has(i.node));
    if (claim && claim.phase !== 'delay' && !mine) installing.push({ node: self, announcedAt: claim.announcedAt });
    const deficit = app.instances - running.length - installing.length;

    if (mine) {
      delete claims[app.name];
      if (!surplusNodes(running, app.instances).includes(self)) continue;
      const since = prev.surplusSince[app.name] ?? now;
      surplusSince[app.name] = since;
      const why = `${running.length} live nodes run it for ${app.instances} instances; this one is among the ${running.length - app.instances} most recently started`;
      if (now - since >= t.settleMs) actions.push({ kind: 'remove-surplus', app: app.name, why });
      else actions.push({ kind: 'wait', app: app.name, why: `surplus: ${why}; confirming`, until: since + t.settleMs });
      continue;
    }
    const othersInstalling = installing.some((i) => i.node !== self);

    if (claim?.phase === 'pulling') {
      if ((input.failures[app.name]?.lastAt ?? -Infinity) >= claim.startedAt) delete claims[app.name];
      else actions.push({ kind: 'wait', app: app.name, why: 'installing here' });
      continue;
    }
    if (claim?.phase === 'announced') {
      if (!limits.enabled) {
        delete claims[app.name];
        actions.push({ kind: 'stand-down', app: app.name, why: 'placement is disabled on this node' });
      } else if (now < claim.announcedAt + t.settleMs) {
        actions.push({ kind: 'wait', app: app.name, why: 'settling: announcements made before ours may still be travelling', until: claim.announcedAt + t.settleMs });
      } else {
        const free = Math.max(0, app.instances - running.length);
        const slots = app.gSync ? Math.min(1, free) : free;
        if (standingDown(installing, slots).includes(self)) {
          delete claims[app.name];
          actions.push({ kind: 'stand-down', app: app.name, why: `${running.length} running and ${installing.length} installing for ${app.instances} instances (${slots} slot(s)); others announced first` });
        } else {
          claims[app.name] = { phase: 'pulling', announcedAt: claim.announcedAt, startedAt: now };
          actions.push({ kind: 'install', app: app.name, hash: app.hash, why: `ranked within the ${slots} slot(s) after the settle` });
        }
      }
      continue;
    }
    if (claim?.phase === 'delay') {
      if (!limits.enabled || deficit <= 0 || (app.gSync && othersInstalling)) {
        delete claims[app.name];
        actions.push({ kind: 'wait', app: app.name, why: !limits.enabled ? 'placement is disabled on this node' : deficit <= 0 ? 'other nodes filled the deficit during the delay' : 'another node installs this g: app' });
      } else if (now < claim.until) {
        actions.push({ kind: 'wait', app: app.name, why: 'randomised delay', until: claim.until });
      } else {
        const f = input.fit(app);
        if (!f.ok) {
          delete claims[app.name];
          actions.push({ kind: 'wait', app: app.name, why: `no longer fit: ${f.reasons.join('; ')}` });
        } else {
          claims[app.name] = { phase: 'announced', announcedAt: now };
          actions.push({ kind: 'announce-installing', app: app.name, hash: app.hash, announcedAt: now, why: `deficit ${deficit} after the delay` });
        }
      }
      continue;
    }
    if (deficit <= 0) continue;
    if (!limits.enabled) {
      actions.push({ kind: 'wait', app: app.name, why: 'placement is disabled on this node' });
      continue;
    }
    const failure = input.failures[app.name];
    const retryAt = failure ? failure.lastAt + backoffMs(failure.count, t.backoffBaseMs, t.backoffMaxMs) : -Infinity;
    if (now < retryAt) actions.push({ kind: 'wait', app: app.name, why: `back-off after ${failure!.count} failed install(s): ${failure!.error}`, until: retryAt });
    else if (app.gSync && othersInstalling) actions.push({ kind: 'wait', app: app.name, why: 'another node installs this g: app (one at a time)' });
    else candidates.push({ app, deficit, delay: delayOf(input.seed, self, app.name, t.delayWindowMs) });
  }

  // A claim on an app no longer global (dropped by a reorganisation, or expired and no longer passed)
  // would hold the claim slot for ever.
  const known = new Set(input.apps.map((a) => a.name));
  for (const [name, c] of Object.entries(claims))
    if (!known.has(name)) {
      delete claims[name];
      if (c.phase === 'announced') actions.push({ kind: 'stand-down', app: name, why: 'the app is no longer global' });
    }
  takeNew(input, candidates, claims, actions);
  return { actions, state: { claims, surplusSince } };
}

/**
 * New claims, up to the free claim slots and `maxApps`: the largest deficit first (a failover before a
 * top-up), then this node's own draw, so nodes with the same candidates tend to start different apps.
 * The fit function is asked only for the apps it would take (it may cost: port probes, policy lookups).
 */
function takeNew(input: PlanInput, candidates: { app: GlobalAppFact; deficit: number; delay: number }[], claims: Record<string, Claim>, actions: Action[]): void {
  const held = Object.keys(claims).length;
  let free = Math.min((input.limits.maxClaims ?? 1) - held, input.limits.maxApps - input.installed.length - held);
  candidates.sort((a, b) => b.deficit - a.deficit || a.delay - b.delay || (a.app.name < b.app.name ? -1 : 1));
  for (const c of candidates) {
    if (free <= 0) {
      const busy = Object.keys(claims).length >= (input.limits.maxClaims ?? 1);
      actions.push({ kind: 'wait', app: c.app.name, why: busy ? 'the claim slot is busy with another app' : `maxApps (${input.limits.maxApps}) reached` });
      continue;
    }
    const f = input.fit(c.app);
    if (!f.ok) {
      actions.push({ kind: 'wait', app: c.app.name, why: `not fit: ${f.reasons.join('; ')}` });
      continue;
    }
    claims[c.app.name] = { phase: 'delay', until: input.now + c.delay };
    actions.push({ kind: 'wait', app: c.app.name, why: `deficit ${c.deficit}: randomised delay before announcing`, until: input.now + c.delay });
    free--;
  }
}
