/**
 * Private registry credentials (`repoauth`) have no place in a specification. A specification is public
 * by construction: it is gossiped to every node, kept in every node's peer store for catch-up and served by
 * `/apps/appspecifications`; a `repoauth` in it (`user:password` as signed) is that password published.
 *
 * - `checkSpecification` (spec-rules.ts) refuses a spec that carries one, naming `compose[i].repoauth`:
 *   verification, registration, update, price, a registration from a peer and every install go through it;
 * - the peer network neither keeps, delivers nor relays a message that carries one (`carriesRepoauth`,
 *   applied by the peers plugin to every message, its own included);
 * - what an older node stored is purged at start (`purgeRepoauth` here, the peers plugin for its store).
 */
import type { Collection, Log } from '../../core/plugin-api.ts';

/** The refusal's reason, for the spec check and the logs. */
export const REPOAUTH_IS_PUBLIC =
  'registry credentials are refused in a specification: a specification is public (gossiped to every node and served by /apps/appspecifications), so a repoauth in it would publish the password';

/** Whether a component field holds credentials: any non-empty string (`""` is what v7 specs carry when there are none). */
const isCredential = (v: unknown) => typeof v === 'string' && v.length > 0;

/**
 * Whether `value` carries a non-empty `repoauth` at any depth (a peer message wraps the spec at some depth
 * of its own). Bounded: deeper than 12 levels counts as carrying one (no spec nests that deep).
 */
export function carriesRepoauth(value: unknown, depth = 0): boolean {
  if (!value || typeof value !== 'object') return false;
  if (depth > 12) return true;
  if (Array.isArray(value)) return value.some((v) => carriesRepoauth(v, depth + 1));
  for (const [k, v] of Object.entries(value)) {
    if (k === 'repoauth' && isCredential(v)) return true;
    if (carriesRepoauth(v, depth + 1)) return true;
  }
  return false;
}

/** A copy of a specification without any `repoauth` value in its components. */
export function withoutRepoauth<T extends Record<string, any>>(spec: T): T {
  if (!spec || !Array.isArray(spec.compose)) return spec;
  return { ...spec, compose: spec.compose.map((c: any) => (c && typeof c === 'object' && 'repoauth' in c ? (({ repoauth: _r, ...rest }) => rest)(c) : c)) };
}

/**
 * Remove every `repoauth` from the specifications stored in `stores` (records of a node from before the
 * refusal: plain or sealed with this node's key, both a copy of a published password) and rewrite each
 * changed file, so the old lines are gone from the disk too. The
 * records themselves are kept; an image that needs the credentials fails its pull with Docker's message.
 */
export async function purgeRepoauth(stores: Record<string, Collection<{ _id?: string; appSpecification: Record<string, any> }>>, log: Log): Promise<void> {
  for (const [name, c] of Object.entries(stores)) {
    const apps: string[] = [];
    for (const d of await c.find({})) {
      if (!carriesRepoauth(d.appSpecification?.compose)) continue;
      await c.update({ _id: d._id }, { $set: { appSpecification: withoutRepoauth(d.appSpecification) } });
      apps.push(String(d.appSpecification?.name));
    }
    if (!apps.length) continue;
    await c.compact?.();
    log.warn({ store: name, apps: [...new Set(apps)] }, 'apps: registry credentials (repoauth) removed from stored specifications; a specification is public');
  }
}
