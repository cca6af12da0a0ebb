/**
 * Placement: whether this node can host a prospective specification (a list of checks with verdicts), and
 * the geography this node knows (itself; its peers once the node learns them).
 *
 * Tiers (the reference's hardware classes) and what a tier offers apps: the tier's totals less what the
 * node keeps for itself (`apps.node.reserve`). A tiered component asks `cpubasic/rambasic/hddbasic` on
 * cumulus, `…super` on nimbus, `…bamf` on stratus, else its plain `cpu/ram/hdd`.
 */
import net from 'node:net';
import os from 'node:os';
import type { InstalledApp } from './installer.ts';
import type { PolicyHolder } from './policy.ts';
import { normalise, type AppSpec } from './spec.ts';

export const TIERS = {
  cumulus: { cpu: 2, ram: 8000, hdd: 220 },
  nimbus: { cpu: 4, ram: 32000, hdd: 440 },
  stratus: { cpu: 8, ram: 64000, hdd: 880 },
} as const;
export type Tier = keyof typeof TIERS;
const TIER_SUFFIX: Record<Tier, string> = { cumulus: 'basic', nimbus: 'super', stratus: 'bamf' };

export interface NodePlace {
  /** '' = from this machine's cores and memory. */
  tier: '' | Tier;
  /** ISO-like codes: continent `EU`, country `CZ`, region `PRG` ('' = unknown). */
  continent: string;
  country: string;
  region: string;
  /** A label for the failure domain this node shares with others (rack, site, provider); '' = its own. */
  faultDomain: string;
  staticIp: boolean;
  /** This node's public key, the key of the policy's enterprise owners map. */
  pubkey: string;
  reserve: { cpu: number; ram: number; hdd: number };
}

export interface Check {
  check: string;
  ok: boolean;
  message: string;
}

export function tierOf(p: NodePlace): Tier {
  if (p.tier) return p.tier;
  const cores = os.cpus().length;
  const ramMb = os.totalmem() / 1024 / 1024;
  if (cores >= 16 && ramMb >= 60000) return 'stratus';
  if (cores >= 8 && ramMb >= 30000) return 'nimbus';
  return 'cumulus';
}

/** What a component locks on a node of `tier`. */
export function needOf(raw: Record<string, any>, tier: Tier): { cpu: number; ram: number; hdd: number } {
  const s = TIER_SUFFIX[tier];
  const t = raw.tiered === true;
  return { cpu: t && raw[`cpu${s}`] ? raw[`cpu${s}`] : raw.cpu, ram: t && raw[`ram${s}`] ? raw[`ram${s}`] : raw.ram, hdd: t && raw[`hdd${s}`] ? raw[`hdd${s}`] : raw.hdd };
}

function componentsRaw(raw: Record<string, any>): Record<string, any>[] {
  return raw.version >= 4 ? raw.compose : [raw];
}

export function lockedBy(apps: InstalledApp[], tier: Tier) {
  const t = { cpu: 0, ram: 0, hdd: 0 };
  for (const a of apps)
    for (const c of componentsRaw(a.appSpecification)) {
      const n = needOf(c, tier);
      t.cpu += n.cpu;
      t.ram += n.ram;
      t.hdd += n.hdd;
    }
  return t;
}

function portFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** The reference's geolocation codes: `ac<continent>[_<country>[_<region>]]` allows, `a!c…` forbids. */
function geoVerdict(codes: string[], p: NodePlace): Check {
  if (!codes.length) return { check: 'geolocation', ok: true, message: 'no geolocation asked' };
  const here = [p.continent, p.country, p.region].filter(Boolean);
  if (!here.length) return { check: 'geolocation', ok: false, message: 'the app asks for a geolocation and this node does not know its own (apps.node.continent/country/region)' };
  const matches = (code: string) => code.split('_').every((part, i) => here[i] === part);
  const allow = codes.filter((c) => c.startsWith('ac')).map((c) => c.slice(2));
  const deny = codes.filter((c) => c.startsWith('a!c')).map((c) => c.slice(3));
  const denied = deny.find(matches);
  if (denied) return { check: 'geolocation', ok: false, message: `this node (${here.join('_')}) is excluded by ${denied}` };
  if (allow.length && !allow.some(matches)) return { check: 'geolocation', ok: false, message: `this node (${here.join('_')}) is not in ${allow.join(', ')}` };
  return { check: 'geolocation', ok: true, message: `this node (${here.join('_')}) matches` };
}

export interface FeasibilityDeps {
  place: NodePlace;
  policy: PolicyHolder;
  installed: InstalledApp[];
  publishHost: string;
  nodeIp: string;
}

export async function feasibility(spec: AppSpec, d: FeasibilityDeps): Promise<{ feasible: boolean; tier: Tier; checks: Check[] }> {
  const tier = tierOf(d.place);
  const raw = spec.raw;
  const checks: Check[] = [{ check: 'specification', ok: true, message: `valid version ${spec.version} specification` }];
  const other = d.installed.filter((a) => a.name !== spec.name);
  if (d.installed.some((a) => a.name === spec.name)) checks.push({ check: 'installed', ok: false, message: `${spec.name} is already installed on this node` });
  else checks.push({ check: 'installed', ok: true, message: `${spec.name} is not installed here` });

  const cap = TIERS[tier];
  const used = lockedBy(other, tier);
  const need = { cpu: 0, ram: 0, hdd: 0 };
  for (const c of componentsRaw(raw)) {
    const n = needOf(c, tier);
    need.cpu += n.cpu;
    need.ram += n.ram;
    need.hdd += n.hdd;
  }
  for (const k of ['cpu', 'ram', 'hdd'] as const) {
    const left = cap[k] - d.place.reserve[k] - used[k];
    const unit = k === 'cpu' ? ' cores' : k === 'ram' ? ' MB' : ' GB';
    checks.push({ check: `resources.${k}`, ok: need[k] <= left + 1e-9, message: `needs ${Number(need[k].toFixed(1))}${unit}, ${Number(Math.max(0, left).toFixed(1))}${unit} left on this ${tier} node` });
  }

  const taken = new Set<number>();
  for (const a of other) for (const c of normalise(a.appSpecification).components) for (const p of c.ports) taken.add(p);
  for (const c of spec.components)
    for (const p of c.ports) {
      if (taken.has(p)) checks.push({ check: 'ports', ok: false, message: `port ${p} is used by another app on this node` });
      else if (!(await portFree(p, d.publishHost))) checks.push({ check: 'ports', ok: false, message: `port ${p} is in use on this node` });
      else checks.push({ check: 'ports', ok: true, message: `port ${p} is free and allowed` });
    }

  for (const c of spec.components) {
    const why = d.policy.blocks(c.repotag);
    checks.push({ check: 'repository', ok: !why, message: why ?? `${c.repotag} is allowed by the network policy` });
  }

  checks.push(geoVerdict(Array.isArray(raw.geolocation) ? raw.geolocation : [], d.place));

  const targets: string[] = Array.isArray(raw.nodes) ? raw.nodes.filter((x: unknown) => typeof x === 'string' && x) : [];
  if (targets.length) {
    const ip = d.nodeIp;
    const ok = !!ip && targets.some((t) => t.split(':')[0] === ip);
    checks.push({ check: 'nodes', ok, message: ok ? `this node (${ip}) is a target` : `this node (${ip || 'unknown IP'}) is not among the app's target nodes` });
  } else checks.push({ check: 'nodes', ok: true, message: 'no target nodes asked' });

  if (raw.staticip === true) checks.push({ check: 'staticip', ok: d.place.staticIp, message: d.place.staticIp ? 'this node has a static IP' : 'the app asks for a static IP and this node has none' });

  const enterprise = (typeof raw.enterprise === 'string' && raw.enterprise) || componentsRaw(raw).some((c) => c.datacenter);
  if (enterprise) {
    const owners = d.policy.held?.policy.enterpriseOwners?.[d.place.pubkey] ?? [];
    const ok = !!d.place.pubkey && owners.includes(spec.owner);
    checks.push({ check: 'enterprise', ok, message: ok ? `the owner is an enterprise owner of this node` : `enterprise apps run only on nodes whose policy entry names the owner (this node: ${d.place.pubkey || 'no pubkey configured'})` });
  } else checks.push({ check: 'enterprise', ok: true, message: 'not an enterprise app' });

  const blocked = (d.policy.held?.policy.tamperingBlockedNodes ?? []) as string[];
  if (d.place.pubkey && blocked.includes(d.place.pubkey)) checks.push({ check: 'node', ok: false, message: 'this node is blocked by the network policy (tampering)' });

  return { feasible: checks.every((c) => c.ok), tier, checks };
}

/**
 * `GET /apps/placementlocations`:
 * { node: {ip, tier, geolocation: {continent, country, region}, faultDomain, staticIp, resources: {total, locked, free}},
 *   faultDomains: [{id, nodes: [ip]}], tiers: {cumulus: [ip], nimbus: [ip], stratus: [ip]}, peers: [] }
 * Peers join `faultDomains`, `tiers` and `peers` once the node learns them (not built yet: only itself).
 */
export function locations(place: NodePlace, nodeIp: string, installed: InstalledApp[]) {
  const tier = tierOf(place);
  const total = { cpu: TIERS[tier].cpu - place.reserve.cpu, ram: TIERS[tier].ram - place.reserve.ram, hdd: TIERS[tier].hdd - place.reserve.hdd };
  const locked = lockedBy(installed, tier);
  locked.cpu = Number(locked.cpu.toFixed(1));
  const free = { cpu: Number(Math.max(0, total.cpu - locked.cpu).toFixed(1)), ram: Math.max(0, total.ram - locked.ram), hdd: Math.max(0, total.hdd - locked.hdd) };
  const id = nodeIp || 'self';
  const faultDomain = place.faultDomain || id;
  const tiers: Record<Tier, string[]> = { cumulus: [], nimbus: [], stratus: [] };
  tiers[tier].push(id);
  return {
    node: { ip: nodeIp, tier, geolocation: { continent: place.continent, country: place.country, region: place.region }, faultDomain, staticIp: place.staticIp, resources: { total, locked, free } },
    faultDomains: [{ id: faultDomain, nodes: [id] }],
    tiers,
    peers: [] as unknown[],
  };
}
