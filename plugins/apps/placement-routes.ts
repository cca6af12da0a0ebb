/**
 * The operator's side of placement:
 * - `GET /apps/placement` (admin): the limits from config and in force, the loop's claims, failures and
 *   recent decisions;
 * - `POST /apps/placement` (admin) `{enabled?, maxApps?, maxResources?: {cpu?, ram?, hdd?}}` changes the
 *   limits at once and keeps them across restarts; `{reset: true}` returns to the config's;
 * - `POST /apps/placementfeasibility` with `{name}` of a global app: the placement checks for it here
 *   plus what the loop knows (instances, who runs and installs it, this node's last decision about it).
 */
import { ApiError, type Collection, type HandlerInput, type PlainHandler } from '../../core/plugin-api.ts';
import type { PeerNetwork } from '../peers/api.ts';
import type { PlacementLimits, PlacementLoop } from './placement-loop.ts';

interface Override extends Partial<PlacementLimits> {
  _id?: string;
}

/** The operator's limits: config, overridden field by field by what the admin route set (kept in a store). */
export class LimitsHolder {
  private override: Override = {};
  constructor(private readonly config: PlacementLimits, private readonly store: Collection) {}

  async load() {
    const d = (await this.store.findOne({ _id: 'limits' })) as Override | null;
    if (d) {
      const { _id, ...rest } = d;
      this.override = rest;
    }
  }
  get(): PlacementLimits {
    const o = this.override;
    return { enabled: o.enabled ?? this.config.enabled, maxApps: o.maxApps ?? this.config.maxApps, maxResources: { ...this.config.maxResources, ...(o.maxResources ?? {}) } };
  }
  view() {
    return { config: this.config, override: this.override, inForce: this.get() };
  }
  async set(body: Record<string, any>): Promise<void> {
    if (body.reset === true) this.override = {};
    else {
      const next: Override = { ...this.override };
      if (body.enabled !== undefined) next.enabled = body.enabled;
      if (body.maxApps !== undefined) next.maxApps = body.maxApps;
      if (body.maxResources !== undefined) next.maxResources = { ...this.config.maxResources, ...(this.override.maxResources ?? {}), ...body.maxResources };
      this.override = next;
    }
    await this.store.update({ _id: 'limits' }, { _id: 'limits', ...this.override }, { upsert: true });
  }
}

export interface PlacementRouteDeps {
  limits: LimitsHolder;
  loop: PlacementLoop;
  peers: () => PeerNetwork | undefined;
  emit: (name: string, data: Record<string, unknown>) => void;
  /** The placement checks of a global app here, or null when it is not global. */
  checksOf: (name: string) => Promise<{ feasible: boolean; tier: string; checks: unknown[]; instances: number } | null>;
}

const sentBody = (input: HandlerInput): any => (input.rawBody?.length ? JSON.parse(input.rawBody.toString('utf8')) : input.body);

export function placementRoutes(d: PlacementRouteDeps, feasibility: PlainHandler): Record<string, PlainHandler> {
  return {
    placement: async () => ({ ...d.limits.view(), network: !!d.peers(), ...d.loop.view(), decisions: d.loop.decisions.slice(-100) }),
    setplacement: async (input) => {
      await d.limits.set(input.values as Record<string, any>);
      const inForce = d.limits.get();
      d.emit('apps.placementlimits', { ...inForce });
      return { message: `Placement ${inForce.enabled ? 'enabled' : 'disabled'} on this node`, ...d.limits.view() };
    },
    placementfeasibility: async (input) => {
      let body: any;
      try {
        body = sentBody(input);
      } catch {
        return feasibility(input);
      }
      // A specification has a version; `{name}` alone asks about a global app.
      if (!body || typeof body !== 'object' || Array.isArray(body) || body.version !== undefined || typeof body.name !== 'string') return feasibility(input);
      const checks = await d.checksOf(body.name);
      if (!checks) throw new ApiError(404, 'NotFound', `Application ${body.name} is not a global app (registered, paid and not expired)`);
      const net = d.peers();
      const heard = net?.heard().get(body.name);
      const limits = d.limits.get();
      const decision = d.loop.lastDecision(body.name);
      return {
        ...checks,
        placement: {
          enabled: limits.enabled,
          network: !!net,
          instances: checks.instances,
          running: (heard?.running ?? []).map((r) => r.ip),
          installing: (heard?.installing ?? []).map((r) => r.ip),
          errors: (heard?.errors ?? []).map((e) => e.error),
          claim: d.loop.view().claims[body.name] ?? null,
          failure: d.loop.view().failures[body.name] ?? null,
          lastDecision: decision ?? null,
        },
      };
    },
  };
}
