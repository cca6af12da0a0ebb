/**
 * The node's state routes: tier (from the collateral of the node status), the /core/info aggregate, DOS
 * state, IP, static IP, geolocation, PGP key, chain account, marketplace URL, availability of another node,
 * and the backend folder (loopback callers only).
 */
import os from 'node:os';
import { ApiError, VERSION, type HandlerInput, type NodeInfo } from '../../core/plugin-api.ts';
import { callNode } from '../../lib/node-http/request.ts';
import type { DaemonService } from '../daemon/api.ts';
import type { Benchmark } from './benchmark.ts';
import type { createDos } from './dos.ts';
import type { createGeolocator } from './geolocation.ts';
import type { NodeConfig } from './settings.ts';

/** Collateral (whole coins) -> tier (facts §4.1). */
const TIERS: Record<number, string> = { 10000: 'cumulus', 25000: 'nimbus', 100000: 'stratus', 1000: 'cumulus_new', 12500: 'nimbus_new', 40000: 'stratus_new' };

export interface StateDeps {
  config: NodeConfig;
  node: NodeInfo;
  daemon: () => DaemonService | undefined;
  benchmark: Benchmark;
  dos: ReturnType<typeof createDos>;
  geo: ReturnType<typeof createGeolocator>;
  pgp: () => Promise<string>;
}

function needDaemon(get: () => DaemonService | undefined): DaemonService {
  const d = get();
  if (!d) throw new ApiError(503, 'DaemonPluginDisabled', 'The daemon plugin is not running on this node');
  return d;
}

/** Daemon and RPC failures as the envelope's error (never a crash). */
function rpcError(e: unknown, what: string): ApiError {
  if (e instanceof ApiError) return e;
  const err = e as { name?: string; code?: number | string; message?: string };
  return new ApiError(err.code ?? 500, err.name && err.name !== 'Error' ? err.name : 'DaemonError', `${what}: ${err.message ?? 'failed'}`);
}

function isLoopback(ip: string): boolean {
  return ip === '::1' || ip.startsWith('127.') || ip.startsWith('::ffff:127.');
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((x) => parseInt(x, 10) || 0);
  const pb = b.split('.').map((x) => parseInt(x, 10) || 0);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
}

export function stateHandlers(d: StateDeps) {
  const { config } = d;

  async function nodeStatus(): Promise<Record<string, unknown>> {
    try {
      return await needDaemon(d.daemon).call<Record<string, unknown>>('getlegacynodestatus', [], { cache: false });
    } catch (e) {
      throw rpcError(e, 'The node status cannot be read from the daemon');
    }
  }

  async function tier(): Promise<string> {
    const status = await nodeStatus();
    const m = /^COutPoint\(([0-9a-fA-F]{64}),\s*(\d{1,6})\)$/.exec(String(status.collateral ?? ''));
    if (!m) throw new ApiError(404, 'NoCollateral', 'The node status names no collateral; the node is not registered');
    let out: { value?: number } | null;
    try {
      out = await needDaemon(d.daemon).call<{ value?: number } | null>('gettxout', [m[1], Number(m[2])], { cache: false });
    } catch (e) {
      throw rpcError(e, 'The collateral cannot be read from the daemon');
    }
    if (!out || typeof out.value !== 'number') throw new ApiError(404, 'CollateralSpent', `The collateral ${m[1]}:${m[2]} is spent or unknown`);
    const t = TIERS[out.value];
    if (!t) throw new ApiError(422, 'UnknownTier', `A collateral of ${out.value} matches no tier`);
    return t;
  }

  /** The benchmark's view of this node's address (`ip:port`), or null. */
  async function ip(): Promise<string | null> {
    try {
      const b = await d.benchmark.call<{ ipaddress?: unknown }>('getbenchmarks');
      return typeof b?.ipaddress === 'string' && b.ipaddress ? b.ipaddress : null;
    } catch {
      return null;
    }
  }

  /** One part of /core/info: its value, or its error in its place. */
  async function part<T>(fn: () => Promise<T> | T): Promise<T | { error: { name: string; message: string } }> {
    try {
      return await fn();
    } catch (e) {
      const err = e as Error;
      return { error: { name: err.name && err.name !== 'Error' ? err.name : 'Failed', message: err.message } };
    }
  }

  return {
    nodetier: () => tier(),
    dosstate: () => d.dos.get(),
    ip: () => ip(),
    geolocation: () => d.geo.get(),
    staticip: async () => (await d.geo.get()).static,
    pgp: () => d.pgp(),
    chainaccount: () => (config.chainAccount ? `chainaccount:${config.chainAccount.account}?chainid=${config.chainAccount.chainid}` : null),
    marketplaceurl: () => `${config.marketplaceUrl.replace(/\/+$/, '')}/marketplace/${config.development ? 'listdevapps' : 'listapps'}`,
    backendfolder: ({ ip: caller }: HandlerInput) => {
      if (!isLoopback(caller)) throw new ApiError(401, 'Unauthorized', 'Access denied: the backend folder is answered to loopback callers only');
      return config.softwareDir;
    },
    async info() {
      const [dInfo, status, bInfo, bStatus, bBench, geolocation, address, dos] = await Promise.all([
        part(() => needDaemon(d.daemon).call('getinfo', [], { cache: false })),
        part(nodeStatus),
        part(() => d.benchmark.call('getinfo')),
        part(() => d.benchmark.call('getstatus')),
        part(() => d.benchmark.call('getbenchmarks')),
        part(() => d.geo.get()),
        part(ip),
        part(() => d.dos.get()),
      ]);
      return {
        daemon: { info: dInfo },
        node: { status },
        benchmark: { info: bInfo, status: bStatus, bench: bBench },
        core: {
          version: VERSION,
          nodeJsVersion: process.versions.node,
          os: os.platform(),
          osVersion: os.release(),
          ip: address,
          staticIp: 'error' in (geolocation as object) ? geolocation : (geolocation as { static: boolean }).static,
          // Whether the node keeps its own ports mapped through UPnP (facts §4.2 `upnp`).
          upnp: config.upnp.enabled,
          legacyid: d.node.operatorId,
          timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,
          dos,
          development: config.development,
        },
        geolocation,
      };
    },
    async checkcoreavailability({ values }: HandlerInput) {
      // An IPv4 address and a port (default 16127), checked by the manifest's input.
      const { ip: target, port } = values as { ip: string; port: number };
      // Only nodes of the network's list are asked: the route is public and must not probe arbitrary hosts.
      let list: { ip?: string }[];
      try {
        list = await needDaemon(d.daemon).call<{ ip?: string }[]>('viewdeterministiclegacynodelist', [], { cache: true });
      } catch (e) {
        throw rpcError(e, 'The node list cannot be read from the daemon');
      }
      // The list names a node `ip` (default port 16127) or `ip:port`.
      const listed = Array.isArray(list) && list.some((n) => n?.ip === `${target}:${port}` || (port === 16127 && n?.ip === target));
      if (!listed) throw new ApiError(404, 'NotConfirmed', `Asking Core ${target}:${port} is not a confirmed node`);
      let version: unknown;
      try {
        // Over HTTPS where the node offers it, else plain HTTP (lib/node-http).
        const res = await callNode(target, port, '/core/version', { timeoutMs: config.availability.timeoutMs, maxBytes: 4096 });
        version = (JSON.parse(res.text) as { data?: unknown }).data;
      } catch (e) {
        throw new ApiError(503, 'NotAvailable', `Asking Core ${target}:${port} is not available (${(e as Error).name === 'TimeoutError' ? 'timeout' : (e as Error).message.slice(0, 100)})`);
      }
      if (typeof version !== 'string' || compareVersions(version, config.availability.minimumVersion) < 0)
        throw new ApiError(503, 'NotAvailable', `Asking Core ${target}:${port} is not available (version ${String(version).slice(0, 20)} below ${config.availability.minimumVersion})`);
      return { message: 'Asking Core is available' };
    },
  };
}
