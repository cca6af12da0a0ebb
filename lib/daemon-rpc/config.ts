/**
 * The config keys every bitcoin-family daemon client takes (a plugin adds its own beside them): where the
 * daemon is, how many calls run and wait, and the method-name overrides.
 */
import type { Network } from './conf.ts';
import type { EndpointSettings } from './endpoint.ts';

export interface LaneSettings {
  /** Calls of this lane running at once. */
  concurrency: number;
  /** Calls of this lane waiting for a slot; beyond, a call fails at once (busy). */
  maxQueued: number;
}

export interface RpcSettings extends EndpointSettings, LaneSettings {
  /** One deadline per call, its wait for a slot included. */
  timeoutMs: number;
  /**
   * The lane of node-internal callers (the explorer, health, control) and of the operator and core team:
   * its own slots and queue, so a flood of public calls cannot keep them out (issue 11).
   */
  priority: LaneSettings;
  /** Spec name -> this daemon's method name, over the built-in table. */
  methods: Record<string, string>;
  health: { timeoutMs: number };
}

export interface RpcSchemaDefaults {
  timeoutMs: number;
  concurrency: number;
  maxQueued: number;
  networks: Network[];
}

/** The JSON Schema properties of those keys, with this daemon's defaults. */
export function rpcConfigProperties(d: RpcSchemaDefaults) {
  return {
    rpc: {
      type: 'object',
      additionalProperties: false,
      properties: { url: { type: 'string', pattern: '^https?://[^\\s]+$' }, user: { type: 'string' }, password: { type: 'string' } },
      default: {},
    },
    /** The daemon's own config file (rpcuser, rpcpassword, rpcport, [network] sections). */
    confFile: { type: 'string', minLength: 1 },
    /** The daemon's cookie file (`__cookie__:<password>`), re-read when the daemon restarts. */
    cookieFile: { type: 'string', minLength: 1 },
    network: { enum: d.networks },
    timeoutMs: { type: 'integer', minimum: 100, maximum: 600_000, default: d.timeoutMs },
    concurrency: { type: 'integer', minimum: 1, maximum: 64, default: d.concurrency },
    maxQueued: { type: 'integer', minimum: 0, maximum: 100_000, default: d.maxQueued },
    priority: {
      type: 'object',
      additionalProperties: false,
      properties: {
        concurrency: { type: 'integer', minimum: 1, maximum: 64, default: 2 },
        maxQueued: { type: 'integer', minimum: 0, maximum: 100_000, default: 1000 },
      },
      default: {},
    },
    methods: { type: 'object', additionalProperties: { type: 'string', pattern: '^[a-z0-9_]{1,64}$' }, default: {} },
    health: {
      type: 'object',
      additionalProperties: false,
      properties: { timeoutMs: { type: 'integer', minimum: 100, maximum: 60_000, default: 4000 } },
      default: {},
    },
  } as const;
}
