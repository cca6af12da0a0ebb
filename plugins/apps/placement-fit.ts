/**
 * Whether this node takes a global app, as the placement loop asks it: the placement checks of
 * `/apps/placementfeasibility` (placement.ts: resources by tier after the reserve, ports free here,
 * geolocation, target nodes, static IP, enterprise owners, blocked repositories, tampering) and the checks
 * only a network has:
 * - the node holds the signed network policy (an install is refused without it);
 * - the operator's limits (`apps.placement.maxResources`: what placed and hand-installed apps may lock);
 * - a host port of the app is not used by an app on another node behind the same public address: the
 *   router forwards a public port to one node only, so the second instance would answer nowhere (the
 *   reference let that happen, and the owner paid for an instance nobody could reach);
 * - the app was not withdrawn by a global remove (until its specification changes).
 */
import { hostOf } from '../../lib/net-addr/addr.ts';
import type { AppsHeard } from '../peers/api.ts';
import type { InstalledApp } from './installer.ts';
import { feasibility, lockedBy, needOf, tierOf, type Check, type FeasibilityDeps } from './placement.ts';
import { normalise, type AppSpec } from './spec.ts';

export interface Resources { cpu: number; ram: number; hdd: number }

export interface FitContext extends FeasibilityDeps {
  policyHeld: boolean;
  /** 0 in a field: no limit of the operator's. */
  maxResources: Resources;
  /** This node's address as peers reach it (`ip:port`), '' when unknown; and its key. */
  address: string;
  self: string;
  heard: AppsHeard;
  /** The host ports of each global app (by name), for the shared-address check. */
  portsOf: (app: string) => number[];
  withdrawn: boolean;
}

export async function placementChecks(spec: AppSpec, c: FitContext): Promise<{ feasible: boolean; tier: string; checks: Check[] }> {
  const base = await feasibility(spec, c);
  const checks = [...base.checks];
  checks.push(c.policyHeld ? { check: 'policy', ok: true, message: 'this node holds the signed network policy' } : { check: 'policy', ok: false, message: 'this node does not hold the signed network policy yet (apps.policy.sources)' });
  if (c.withdrawn) checks.push({ check: 'withdrawn', ok: false, message: 'a global remove by its owner or the core team withdrew this app; it is placed again once its specification is updated' });
  checks.push(...limitChecks(spec, c));
  checks.push(...sharedAddressChecks(spec, c));
  return { feasible: checks.every((x) => x.ok), tier: base.tier, checks };
}

function limitChecks(spec: AppSpec, c: FitContext): Check[] {
  const limits = c.maxResources;
  if (!limits.cpu && !limits.ram && !limits.hdd) return [];
  const tier = tierOf(c.place);
  const used = lockedBy(c.installed.filter((a) => a.name !== spec.name), tier);
  const need = { cpu: 0, ram: 0, hdd: 0 };
  for (const comp of spec.raw.version >= 4 ? spec.raw.compose : [spec.raw]) {
    const n = needOf(comp, tier);
    need.cpu += n.cpu;
    need.ram += n.ram;
    need.hdd += n.hdd;
  }
  const out: Check[] = [];
  for (const k of ['cpu', 'ram', 'hdd'] as const) {
    if (!limits[k]) continue;
    const ok = used[k] + need[k] <= limits[k] + 1e-9;
    out.push({ check: `limit.${k}`, ok, message: `needs ${Number(need[k].toFixed(1))} with ${Number(used[k].toFixed(1))} locked by the apps here, of the operator's limit ${limits[k]} (apps.placement.maxResources)` });
  }
  return out;
}

function sharedAddressChecks(spec: AppSpec, c: FitContext): Check[] {
  const mine = new Set(spec.components.flatMap((x) => x.ports));
  if (!mine.size || !c.address) return [];
  const host = hostOf(c.address);
  const out: Check[] = [];
  for (const [app, h] of c.heard) {
    if (app === spec.name) continue;
    const nodes = [...h.running, ...h.installing].filter((e) => e.node !== c.self && hostOf(e.ip) === host);
    if (!nodes.length) continue;
    const clash = c.portsOf(app).filter((p) => mine.has(p));
    if (clash.length) out.push({ check: 'sharedaddress', ok: false, message: `port ${clash.join(', ')} is taken by ${app} on another node behind this node's public address ${host}` });
  }
  if (!out.length) out.push({ check: 'sharedaddress', ok: true, message: `no other node behind ${host} uses the app's ports` });
  return out;
}

/** The host ports of a specification (every component's). */
export const portsOfSpec = (raw: Record<string, any>): number[] => normalise(raw).components.flatMap((x) => x.ports);

export type { InstalledApp };
