/**
 * File synchronisation: the node's Syncthing, supervised here (own home under the data folder, GUI/API on
 * 127.0.0.1) or an existing one (URL and config folder), behind the spec's /filesync routes; its fitness
 * check on /core/health; and app data that follows the app (`r:` and `g:` folders, see follower.ts).
 */
import os from 'node:os';
import path from 'node:path';
import { ApiError, configSchema, coreServices, definePlugin, optional, type Collection } from '../../core/plugin-api.ts';
import { appsService } from '../apps/api.ts';
import { peerNetwork } from '../peers/api.ts';
import { SyncthingClient } from './client.ts';
import { Follower, type DeviceRecord, type FolderState } from './follower.ts';
import { makeHandlers } from './handlers.ts';
import { peerLink } from './peers.ts';
import { Supervisor } from './supervisor.ts';

export interface FilesyncConfig {
  mode: 'supervise' | 'external';
  binary: string;
  home: string;
  guiPort: number;
  listenHost: string;
  peerPort: number;
  globalDiscovery: boolean;
  relays: boolean;
  reconnectSeconds: number;
  url: string;
  configDir: string;
  timeoutMs: number;
  follow: { enabled: boolean; intervalMs: number; primaryTimeoutMs: number };
  peers: { scheme: 'auto' | 'http' | 'https'; defaultApiPort: number; timeoutMs: number };
}

export default definePlugin({
  id: 'filesync',
  version: '1.0.0',
  deps: {
    apps: optional(appsService),
    peers: optional(peerNetwork),
    node: coreServices.node,
    health: coreServices.health,
    store: coreServices.store,
    events: coreServices.events,
    log: coreServices.log,
    ports: coreServices.ports,
  },
  configSchema: configSchema<FilesyncConfig>({
    type: 'object',
    additionalProperties: false,
    properties: {
      // external by default: a node supervises Syncthing when its operator says so (a supervised Syncthing
      // that cannot run refuses login phrases, which a node without Syncthing installed must not do).
      mode: { enum: ['supervise', 'external'], default: 'external' },
      binary: { type: 'string', minLength: 1, default: 'syncthing' },
      home: { type: 'string', default: '' },
      guiPort: { type: 'integer', minimum: 1, maximum: 65535, default: 8384 },
      listenHost: { type: 'string', minLength: 1, default: '0.0.0.0' },
      peerPort: { type: 'integer', minimum: 0, maximum: 65535, default: 0 },
      globalDiscovery: { type: 'boolean', default: true },
      relays: { type: 'boolean', default: true },
      reconnectSeconds: { type: 'integer', minimum: 1, maximum: 3600, default: 60 },
      url: { type: 'string', pattern: '^https?://', default: 'http://127.0.0.1:8384' },
      configDir: { type: 'string', default: '' },
      timeoutMs: { type: 'integer', minimum: 100, default: 5000 },
      follow: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          enabled: { type: 'boolean', default: true },
          intervalMs: { type: 'integer', minimum: 50, default: 10_000 },
          primaryTimeoutMs: { type: 'integer', minimum: 0, default: 0 },
        },
      },
      peers: {
        type: 'object',
        additionalProperties: false,
        default: {},
        properties: {
          scheme: { enum: ['auto', 'http', 'https'], default: 'auto' },
          defaultApiPort: { type: 'integer', minimum: 1, maximum: 65535, default: 16127 },
          timeoutMs: { type: 'integer', minimum: 100, default: 3000 },
        },
      },
    },
  }),
  async setup(ctx) {
    const cfg = ctx.config;
    const supervised = cfg.mode === 'supervise';
    const home = cfg.home ? path.resolve(cfg.home) : path.resolve(ctx.node.dataDir, 'filesync', 'syncthing');
    const configDir = supervised ? home : cfg.configDir ? path.resolve(cfg.configDir) : path.join(os.homedir(), '.config', 'syncthing');
    const client = new SyncthingClient(supervised ? `http://127.0.0.1:${cfg.guiPort}` : cfg.url, path.join(configDir, 'config.xml'), cfg.timeoutMs);

    const folders = ctx.store('folders') as Collection<FolderState>;
    const dropPorts = ctx.ports.claim('file sync (Syncthing)', ownPorts(cfg, supervised, ctx.node.apiPort));
    let supervisor: Supervisor | null = null;
    if (supervised) {
      const peerPort = cfg.peerPort || ctx.node.apiPort + 2;
      const host = cfg.listenHost.includes(':') ? `[${cfg.listenHost}]` : cfg.listenHost;
      // g: folders start receive-only: a node back from a stop is no primary until elected again, and its
      // Syncthing must not send what its container may write before the first round stops it.
      const receiveOnly = async () => (await folders.find({ mode: 'g' })).map((f) => f.folder);
      supervisor = new Supervisor(
        { binary: cfg.binary, home, guiPort: cfg.guiPort, listenAddress: `tcp://${host}:${peerPort}`, globalDiscovery: cfg.globalDiscovery, relays: cfg.relays, reconnectSeconds: cfg.reconnectSeconds, receiveOnly },
        ctx.log,
      );
      void supervisor.start();
    }

    // Health: an authenticated ping answering pong. One failed measure is tolerated (a restart in progress),
    // the next fails the check. Required (it refuses login phrases) only when this node supervises Syncthing.
    // While the node's Syncthing has not answered yet and no start of it failed (its home prepared, keys
    // generated, its own restart with code 3 on a first start: 1-3 s, longer on a busy machine), up to a
    // minute, the check passes: a node just started is not refused. (Checking only for a running first
    // process refused phrases at load 8, before the process was spawned.)
    let failures = 0;
    let everAnswered = false;
    const bootUntil = Date.now() + 60_000;
    const dropCheck = ctx.health.register(
      'filesync',
      async () => {
        const ok = await client.ping();
        failures = ok ? 0 : failures + 1;
        everAnswered ||= ok;
        if (ok) return { ok: true, message: `Syncthing answers at ${client.url}` };
        if (supervisor && !everAnswered && supervisor.failures === 0 && Date.now() < bootUntil)
          return { ok: true, message: 'Syncthing is starting', detail: { supervised, failures } };
        const why = supervised ? supervisor!.lastError || 'Syncthing does not answer' : `Syncthing at ${client.url} does not answer`;
        return { ok: failures < 2, message: failures < 2 ? `one failed ping tolerated: ${why}` : why, detail: { supervised, failures } };
      },
      { required: supervised, timeoutMs: cfg.timeoutMs + 1000 },
    );

    const link = peerLink({ scheme: cfg.peers.scheme, defaultApiPort: cfg.peers.defaultApiPort, timeoutMs: cfg.peers.timeoutMs });
    const follower = new Follower({
      client,
      apps: () => ctx.apps(),
      peers: () => ctx.peers(),
      link,
      store: folders,
      devices: ctx.store('devices') as Collection<DeviceRecord>,
      emit: (name, data) => void ctx.events.emit(name, data),
      log: ctx.log,
      intervalMs: cfg.follow.intervalMs,
      primaryTimeoutMs: cfg.follow.primaryTimeoutMs || cfg.follow.intervalMs * 3,
    });
    if (cfg.follow.enabled) follower.start();

    const handlers = makeHandlers({
      client: () => client,
      supervised,
      listener: supervisor ? { starts: () => supervisor!.apiStarts, startedAfter: (n, ms) => supervisor!.apiStartedAfter(n, ms) } : undefined,
      ready: () => {
        if (supervisor && !supervisor.running) throw new ApiError(503, 'FileSyncUnavailable', 'Syncthing is not running properly');
      },
      promoted: async (appname) => {
        if (!ctx.apps()) throw new ApiError(503, 'AppsUnavailable', 'The apps plugin is not running on this node');
        return follower.promoted(appname);
      },
    });
    return {
      handlers,
      dispose: async () => {
        dropPorts();
        dropCheck();
        await follower.stop();
        await supervisor?.stop();
      },
    };
  },
});

/**
 * The ports this node's Syncthing uses, which no app may publish: the supervised one's GUI/API and peer
 * port; an external one's GUI/API port (when it runs on this machine) and Syncthing's default sync port
 * (22000, TCP and QUIC) and local discovery port (21027), which an external instance keeps unless its own
 * operator changed them.
 */
function ownPorts(cfg: FilesyncConfig, supervised: boolean, apiPort: number): number[] {
  if (supervised) return [cfg.guiPort, cfg.peerPort || apiPort + 2];
  const url = new URL(cfg.url);
  const local = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/i.test(url.hostname);
  const guiPort = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return [...(local ? [guiPort] : []), 22000, 21027];
}
