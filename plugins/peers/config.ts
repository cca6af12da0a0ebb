/** The `peers:` config section (README: config keys) and the protocol config it makes. */
import { configSchema, type NodeInfo } from '../../core/plugin-api.ts';
import { DEFAULTS, type ProtocolConfig } from './protocol/config.ts';

export interface PeersConfig extends Omit<typeof DEFAULTS, 'minimums'> {
  /** This node's address as peers reach it; '' = the API listener's host, or when it listens on all, the
   * address the node's peers see it connect from. */
  ip: string;
  seeds: string[];
  minimums: ProtocolConfig['minimums'];
  /** Re-announce the apps this node runs this often (a location not re-announced for locationTtlMs is gone). */
  announceMs: number;
  locationTtlMs: number;
  /** How long a global command stays valid after its caller signed it (and how long a taken one is remembered). */
  globalCommandMaxAgeMs: number;
  /** Who may join: `nodelist` (nodes of the daemon's node list at their listed IP) or `open` (any key). */
  membership: 'nodelist' | 'open';
  /** This node's listed node key (WIF or hex); '' = `legacynodeprivkey` of the daemon's conf file. */
  nodePrivateKey: string;
  /** How long a read of the node list is used (and how often admitted peers are checked against it). */
  nodeListCacheMs: number;
  /** This node's clock may be this far from its peers' (median) before `/core/clockdrift` and `/core/health` say it is over. */
  maxClockDriftMs: number;
}

const num = (d: number) => ({ type: 'integer', minimum: 1, default: d });

export const peerConfigSchema = configSchema<PeersConfig>({
  type: 'object',
  additionalProperties: false,
  properties: {
    // IPv4, or IPv6 (seeds bracket it: `[2001:db8::1]:16127`).
    ip: { type: 'string', maxLength: 45, pattern: '^$|^[0-9]{1,3}(\\.[0-9]{1,3}){3}$|^[0-9a-fA-F:]*:[0-9a-fA-F:.]*$', default: '' },
    seeds: { type: 'array', maxItems: 100, items: { type: 'string', maxLength: 60, pattern: '^[0-9]{1,3}(\\.[0-9]{1,3}){3}:[0-9]{1,5}$|^\\[[0-9a-fA-F:.]+\\]:[0-9]{1,5}$' }, default: [] },
    ...Object.fromEntries(Object.entries(DEFAULTS).filter(([k]) => k !== 'minimums').map(([k, v]) => [k, num(v as number)])),
    minimums: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: Object.fromEntries(Object.entries(DEFAULTS.minimums).map(([k, v]) => [k, { type: 'integer', minimum: 0, default: v }])),
    },
    // Every 15 s, and a node not heard for 45 s (three missed announcements) is gone: the placement loop
    // replaces its apps within the minute (the reference keeps a location for two hours). The cost: one
    // notice per node every 15 s on the network.
    announceMs: num(15_000),
    locationTtlMs: num(45_000),
    globalCommandMaxAgeMs: num(120_000),
    membership: { enum: ['nodelist', 'open'], default: 'nodelist' },
    nodePrivateKey: { type: 'string', maxLength: 128, default: '' },
    nodeListCacheMs: num(60_000),
    // A quarter of the tightest window a signed timestamp has (global commands: 2 min; broadcasts: 10 min),
    // so an operator hears of a drifting clock before the network refuses the node's commands, and far
    // above what the measure itself errs by (half a round trip, under a second between nodes).
    maxClockDriftMs: num(30_000),
  },
} as any);

export function protocolConfig(cfg: PeersConfig, node: NodeInfo): ProtocolConfig {
  const host = node.apiHost && node.apiHost !== '0.0.0.0' && node.apiHost !== '::' ? node.apiHost : '127.0.0.1';
  const { announceMs: _a, locationTtlMs: _l, globalCommandMaxAgeMs: _g, membership: _m, nodePrivateKey: _k, nodeListCacheMs: _c, maxClockDriftMs: _d, ...rest } = cfg;
  return { ...rest, ip: cfg.ip || host, port: node.apiPort, tlsPort: node.httpsPort, autoIp: !cfg.ip && host === '127.0.0.1' && node.apiHost !== '127.0.0.1' };
}
