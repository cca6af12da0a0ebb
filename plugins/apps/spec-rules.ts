/**
 * The rules of a specification that its JSON Schema (manifests/apps.yaml) cannot say: name prefixes,
 * unique component names, ports (paired, banned, enterprise-only, unique on the node), the containerData
 * grammar, cpu steps, totals per tier, no registry credentials (repoauth.ts). Every error names the field
 * (`compose[1].ports[0]: ...`).
 */
import { ApiError } from '../../core/plugin-api.ts';
import { REPOAUTH_IS_PUBLIC } from './repoauth.ts';
import { registryRefusal, type RegistryRules } from './image-host.ts';
import { fieldOf, normalise, type AppSpec } from './spec.ts';

/** Ports no app may publish (reference 6.1): the node's own services and well-known system ports. */
const BANNED: [number, number][] = [
  [16100, 16299], [26100, 26299], [30000, 30099], [8384, 8384], [27017, 27017], [22, 23], [25, 25], [3389, 3389],
  [5900, 5901], [5800, 5800], [161, 161], [512, 513], [3388, 3388], [4444, 4444], [123, 123], [53, 53],
];
/** Ports only enterprise owners may publish. */
const ENTERPRISE_ONLY: [number, number][] = [[0, 1023], [8080, 8081], [8443, 8443], [6667, 6667]];
const within = (p: number, ranges: [number, number][]) => ranges.some(([a, b]) => p >= a && p <= b);

/** Totals an app may lock on one node (the largest tier). */
export const LIMITS = { cpu: 15, ram: 59000, hdd: 820 };

export interface RuleContext {
  /** Whether the owner is an enterprise owner of the network policy. */
  isEnterprise(owner: string): boolean;
  /** Ports the network policy blocks. */
  blockedPorts: number[];
  /** What of the node itself uses `port` (its API and neighbours, file sync, daemons, ...), or undefined. */
  ownPort(port: number): string | undefined;
  /** Which registries images may come from (image-host.ts). */
  registries: RegistryRules;
}

export class SpecError extends ApiError {
  constructor(readonly field: string, reason: string) {
    super(400, 'ValidationError', `Invalid specification: ${field}: ${reason}`);
  }
}

const OWNER = /^(1[1-9A-HJ-NP-Za-km-z]{25,34}|0x[0-9a-fA-F]{40})$/;
const ABS_PATH = /^\/[^\0|:]*$/;

function checkPath(field: string, p: string) {
  if (!ABS_PATH.test(p)) throw new SpecError(field, `'${p}' must be an absolute path`);
  if (p.split('/').some((s) => s === '..' || s === '.')) throw new SpecError(field, `'${p}' must not contain '.' or '..'`);
}

/** Names at a volume root the node keeps for itself (the volumes plugin's staging folder is `.corenode-staging`). */
const NODE_OWNED = /^\.corenode/i;

/**
 * The host side of an `m:`/`f:`/`c:`/`cf:` entry: one folder or file name at the root of a component's
 * volume, bound as `<volume root>/<name>`. One path segment and nothing else: `.` would bind the volume root
 * (its staging and backups), `..` the folder of every tenant's volume (`m:..:/escape` gave the container
 * every app's `appdata`, read and write). Answers the name or throws naming the field.
 */
export function hostName(field: string, part: string, value: string): string {
  const why =
    value === '' ? 'is empty'
    : value === '.' || value === '..' ? `is '${value}'`
    : value.includes('/') ? "holds a '/'"
    : value.includes('\0') ? 'holds NUL'
    : value.length > 64 ? 'is longer than 64 characters'
    : !/^[a-zA-Z0-9_.-]+$/.test(value) ? 'has a character outside [a-zA-Z0-9_.-]'
    : NODE_OWNED.test(value) ? "starts with '.corenode' (the node's own folders)"
    : null;
  if (why) throw new SpecError(field, `'${part}': the host name '${value}' ${why}; it must be one folder or file name inside the component's volume`);
  return value;
}

/**
 * containerData: `|`-separated; the first is the primary `[flags:]<abs path>` (flags of r, g, s), then
 * `m:<subdir>:<path>`, `f:<file>:<path>`, `<n>:<path>`, `c:<n>:<subdir>:<path>`, `cf:<n>:<file>:<path>`
 * where n names an earlier component by index. Every spec check (registration, update, install, test install,
 * redeploy) and every container the node creates (Engine.binds) parse it here.
 */
export function parseContainerData(value: string, field: string, index: number): ContainerMount[] {
  if (!value) return [];
  const parts = value.split('|');
  const out: ContainerMount[] = [];
  const primary = /^(?:([rgs]{1,3}):)?(\/.*)$/.exec(parts[0]);
  if (!primary) throw new SpecError(field, `the first entry '${parts[0]}' must be [flags:]/absolute/path with flags r, g or s`);
  checkPath(field, primary[2]);
  out.push({ kind: 'primary', flags: primary[1] ?? '', path: primary[2] });
  const ref = (n: string) => {
    const k = Number(n);
    if (!Number.isInteger(k) || k < 0 || k >= index) throw new SpecError(field, `component ${n} must name an earlier component by its index`);
    return k;
  };
  for (const part of parts.slice(1)) {
    const f = part.split(':');
    const sub = (k: number) => hostName(field, part, f[k]);
    if (f[0] === 'm' && f.length === 3) out.push({ kind: 'dir', sub: sub(1), path: f[2] });
    else if (f[0] === 'f' && f.length === 3) out.push({ kind: 'file', sub: sub(1), path: f[2] });
    else if (/^\d+$/.test(f[0]) && f.length === 2) out.push({ kind: 'primary-of', component: ref(f[0]), path: f[1] });
    else if (f[0] === 'c' && f.length === 4) out.push({ kind: 'dir', component: ref(f[1]), sub: sub(2), path: f[3] });
    else if (f[0] === 'cf' && f.length === 4) out.push({ kind: 'file', component: ref(f[1]), sub: sub(2), path: f[3] });
    else throw new SpecError(field, `'${part}' is not one of m:<dir>:<path>, f:<file>:<path>, <n>:<path>, c:<n>:<dir>:<path>, cf:<n>:<file>:<path>`);
    checkPath(field, out[out.length - 1].path);
  }
  const paths = out.map((m) => m.path);
  if (new Set(paths).size !== paths.length) throw new SpecError(field, 'a container path is mounted twice');
  return out;
}

export type ContainerMount =
  | { kind: 'primary'; flags: string; path: string }
  | { kind: 'primary-of'; component: number; path: string }
  | { kind: 'dir' | 'file'; component?: number; sub: string; path: string };

/** Check a schema-valid raw specification; answers it normalised or throws a SpecError naming the field. */
export function checkSpecification(raw: Record<string, any>, ctx: RuleContext): AppSpec {
  const spec = normalise(raw);
  if (/^(core|legacy)/i.test(spec.name)) throw new SpecError('name', "must not start with 'core' or 'legacy' (vendor prefixes)");
  if (spec.name.toLowerCase() === 'watchtower') throw new SpecError('name', "'watchtower' is reserved");
  if (!OWNER.test(spec.owner)) throw new SpecError('owner', 'must be a P2PKH address or an ethereum address');
  if (raw.version === 8 && raw.datacenter && !ctx.isEnterprise(spec.owner)) throw new SpecError('datacenter', 'is for enterprise owners only');
  const names = new Set<string>();
  const hostPorts = new Map<number, string>();
  const total = { cpu: 0, ram: 0, hdd: 0 };
  spec.components.forEach((c, i) => {
    const f = (field: string) => fieldOf(spec, i, field);
    if (spec.version >= 4) {
      if (names.has(c.name.toLowerCase())) throw new SpecError(f('name'), `component name '${c.name}' is used twice`);
      names.add(c.name.toLowerCase());
    }
    if (c.ports.length !== c.containerPorts.length) throw new SpecError(f('containerPorts'), `must have one entry per port (${c.ports.length})`);
    c.ports.forEach((p, j) => {
      const pf = spec.version === 1 ? f('ports') : `${f('ports')}[${j}]`;
      if (p < 1) throw new SpecError(pf, 'must be between 1 and 65535');
      const own = ctx.ownPort(p);
      if (own) throw new SpecError(pf, `port ${p} is used by the node itself (${own})`);
      if (within(p, BANNED)) throw new SpecError(pf, `port ${p} is banned`);
      if (ctx.blockedPorts.includes(p)) throw new SpecError(pf, `port ${p} is blocked by the network policy`);
      if (within(p, ENTERPRISE_ONLY) && !ctx.isEnterprise(spec.owner)) throw new SpecError(pf, `port ${p} is for enterprise owners only`);
      if (hostPorts.has(p)) throw new SpecError(pf, `port ${p} is already used by ${hostPorts.get(p)}`);
      hostPorts.set(p, f('ports'));
    });
    c.containerPorts.forEach((p, j) => {
      if (p < 1) throw new SpecError(spec.version === 1 ? f('containerPorts') : `${f('containerPorts')}[${j}]`, 'must be between 1 and 65535');
    });
    if (Math.abs(Math.round(c.cpu * 10) - c.cpu * 10) > 1e-9) throw new SpecError(f('cpu'), 'must be a multiple of 0.1 cores');
    if (!/^[a-z0-9]([a-z0-9._/:@-]*[a-z0-9])?$/i.test(c.repotag) || !c.repotag.includes(':')) throw new SpecError(f('repotag'), 'must be an image reference with a tag (repository:tag)');
    const registry = registryRefusal(c.repotag, ctx.registries);
    if (registry) throw new SpecError(f('repotag'), registry);
    parseContainerData(c.containerData, f('containerData'), i);
    if (c.repoauth) throw new SpecError(f('repoauth'), REPOAUTH_IS_PUBLIC);
    for (const [k, v] of c.environmentParameters.entries()) if (!v.includes('=')) throw new SpecError(`${f('environmentParameters')}[${k}]`, 'must be NAME=value');
    total.cpu += c.cpu;
    total.ram += c.ram;
    total.hdd += c.hdd;
  });
  for (const k of ['cpu', 'ram', 'hdd'] as const)
    if (total[k] > LIMITS[k] + 1e-9) throw new SpecError(spec.version >= 4 ? 'compose' : k, `the app takes ${+total[k].toFixed(1)} ${k}, more than ${LIMITS[k]}`);
  if (raw.version >= 5) {
    raw.geolocation.forEach((g: string, i: number) => {
      if (!/^(ac|a!c)[A-Z]{2,3}(_[A-Z]{2}(_[A-Za-z0-9-]+)?)?$|^(ac)?ALL$|^a[A-Z]{2}$|^b[A-Z]{2}$/.test(g)) throw new SpecError(`geolocation[${i}]`, `'${g}' is not a location code`);
    });
  }
  return spec;
}
