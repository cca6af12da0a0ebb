/**
 * The host: loads the manifests of one service, sets up the plugins they name, serves the route table over
 * HTTP(S) and websockets, and swaps in changed manifests or plugin states while it serves.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { pino, type Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { AuthService } from './auth.ts';
import type { BoundRoute, ChainServices } from './chain.ts';
import { bindManifests } from './bind.ts';
import type { NodeConfig } from './config.ts';
import { cors } from './cors.ts';
import { envelope } from './errors.ts';
import { EventBus } from './events.ts';
import { Gates } from './gates.ts';
import { HealthRegistry } from './health.ts';
import { loadManifestDir, type Manifest } from './manifest.ts';
import type { Caller, Clock, PluginContext, PluginDefinition, ServiceRegistry } from './plugin-api.ts';
import { PluginSet, validatePluginConfig } from './plugins.ts';
import { PluginState } from './plugin-state.ts';
import { OperationsService } from './queue.ts';
import { Stores } from './store.ts';
import { drained, type RouteTable } from './table.ts';
import { ManifestWatcher } from './watch.ts';
import { handleUpgrade } from './ws-upgrade.ts';

export interface HostOptions {
  config: NodeConfig;
  /** Which manifests this host serves: the node API or the deployment trigger. */
  service?: string;
  clock?: Clock;
  logger?: Logger;
  /** Plugins built into the host (not loaded from pluginsDir). */
  builtins?: PluginDefinition[];
  /** Keep every collection in memory (no files). */
  inMemory?: boolean;
  /** Called just before any handler runs (tests). */
  onHandler?: (routeId: string, caller: Caller) => void;
  /** Answer cross-origin calls (default true). The deployment trigger turns it off: no browser page may call it. */
  cors?: boolean;
  /** Tune the HTTP server before it listens (timeouts, connection caps). */
  onServer?: (server: http.Server | https.Server) => void;
  /** How long a reload waits for requests on the replaced routes before disposing retired plugins. */
  drainMs?: number;
}

export type ReloadResult = { ok: true; routes: number; added: string[]; removed: string[] } | { ok: false; error: string };

export class Host {
  readonly config: NodeConfig;
  readonly service: string;
  readonly log: Logger;
  readonly clock: Clock;
  readonly app = new Koa();
  readonly events = new EventBus();
  readonly health = new HealthRegistry();
  readonly gates = new Gates();
  readonly auth: AuthService;
  readonly stores: Stores;
  readonly queue: OperationsService;
  readonly pluginState: PluginState;
  server?: http.Server | https.Server;

  private table: RouteTable | null = null;
  private ready = false;
  private stopping = false;
  readonly plugins: PluginSet;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  private watcher?: ManifestWatcher;
  private reloadTimer?: NodeJS.Timeout;
  private reloading: Promise<ReloadResult> | null = null;
  private readonly chainServices: ChainServices;

  constructor(private readonly opts: HostOptions) {
    this.config = opts.config;
    this.service = opts.service ?? 'node';
    this.clock = opts.clock ?? { now: () => Date.now() };
    this.log = opts.logger ?? pino({ level: this.config.log.level, base: { service: this.service } });
    this.stores = new Stores(opts.inMemory ? null : this.config.dataDir);
    this.auth = new AuthService(
      () => this.config.initial.legacyid,
      () => this.config.coreTeam,
    );
    this.queue = new OperationsService(this.stores.get('host', 'operations'), this.clock, {
      concurrency: this.config.queue.concurrency,
      retentionMs: this.config.queue.retentionSeconds * 1000,
    });
    this.pluginState = new PluginState(opts.inMemory ? null : path.join(this.config.dataDir, 'plugins.json'), this.config.plugins);
    const builtins = opts.builtins ?? [];
    this.plugins = new PluginSet(builtins, {
      pluginsDir: this.config.pluginsDir,
      state: this.pluginState,
      log: this.log,
      context: (def, services) => this.contextFor(def, services),
      alwaysOn: builtins.map((b) => b.id),
    });
    this.chainServices = {
      auth: this.auth,
      gates: this.gates,
      queue: this.queue,
      log: this.log,
      pluginRefusal: (id) => this.plugins.refusal(id),
      onHandler: opts.onHandler,
    };
    // One middleware: CORS, booting, then the route table (a snapshot: a request finishes on the table it
    // started with, even if a reload swaps it meanwhile; the table counts its requests, so plugins a swap
    // retires are disposed only after they are answered), else 404.
    this.app.use((ctx) => {
      if (ctx.req.headers.origin && opts.cors !== false && cors(ctx)) return;
      if (!this.ready) {
        ctx.status = 503;
        ctx.set('Retry-After', '1');
        if (this.stopping) ctx.set('Connection', 'close');
        ctx.body = envelope.error(
          this.stopping
            ? { code: 503, name: 'ShuttingDown', message: 'The node is shutting down; try again shortly' }
            : { code: 503, name: 'Booting', message: 'The node has not finished booting; try again shortly' },
        );
        return;
      }
      return this.table!.middleware(ctx, notFound);
    });
    this.app.on('error', (err) => this.log.debug({ err }, 'connection error'));
  }

  /** The live route table (for OpenAPI, corectl and tests). */
  get routes(): BoundRoute[] {
    return this.table?.routes ?? [];
  }

  /** The services plugins provide each other (tests, diagnostics). */
  get provided(): ReadonlyMap<string, unknown> {
    return this.plugins.services();
  }

  get manifests(): Manifest[] {
    return this.table?.manifests ?? [];
  }

  /** Load manifests and plugins; throws on any error (a node does not start on a bad set). */
  async start(): Promise<void> {
    await this.queue.init();
    // The watchers take their fingerprint before the first load: a change during start-up is not lost,
    // and the start-up itself triggers no second load.
    if (this.config.watch && !this.opts.inMemory) this.watch();
    const res = await this.reload({ strict: true });
    if (!res.ok) {
      this.unwatch();
      throw new Error(res.error);
    }
    this.ready = true;
  }

  get isReady(): boolean {
    return this.ready;
  }

  async listen(port = this.config.api.port, host = this.config.api.host): Promise<number> {
    const tls = this.config.api.tls;
    const handler = this.app.callback();
    this.server = tls
      ? https.createServer({ cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key) }, handler)
      : http.createServer(handler);
    // With a listener, Node no longer answers `Expect: 100-continue` itself: the chain sends 100 only when
    // it is about to read the body, so a body over the limit is refused (413) before it is sent at all.
    this.server.on('checkContinue', (req, res) => handler(req, res));
    this.server.keepAliveTimeout = 65_000;
    this.opts.onServer?.(this.server);
    this.server.on('upgrade', (req, socket, head) =>
      void handleUpgrade(
        { table: () => this.table, ready: () => this.ready, svc: this.chainServices, auth: this.auth, wss: this.wss, log: this.log },
        req,
        socket as import('node:net').Socket,
        head,
      ),
    );
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  /**
   * Re-read the manifests and rebuild the table. All or nothing: any error leaves the running routes as
   * they were and is returned (and logged). Calls are serialised.
   */
  reload(opts: { strict?: boolean } = {}): Promise<ReloadResult> {
    const run = () => this.load(opts.strict ?? false);
    const next = (this.reloading ?? Promise.resolve()).then(run, run);
    this.reloading = next;
    return next;
  }

  private async load(strict: boolean): Promise<ReloadResult> {
    let created: string[] = [];
    let table: RouteTable;
    const old = this.table;
    try {
      const manifests = loadManifestDir(this.config.manifestsDir).filter((m) => m.service === this.service);
      const referenced = new Set<string>();
      for (const m of manifests) {
        const other = manifests.find((o) => o.plugin === m.plugin && o !== m);
        if (other) throw new Error(`${m.source}: plugin ${m.plugin} already has a manifest (${other.file})`);
        referenced.add(m.plugin);
      }
      await this.plugins.importFor(manifests);
      created = await this.plugins.setUp(referenced);
      table = bindManifests(manifests, (id) => this.plugins.instance(id), strict, this.log, this.chainServices);
    } catch (e) {
      await this.plugins.dispose(created);
      const error = (e as Error).message;
      this.log.error({ error }, 'manifests not loaded; the running routes are unchanged');
      this.events.emit('host:reload-failed', { error });
      return { ok: false, error };
    }
    const retired = this.plugins.retire(new Set(table.manifests.map((m) => m.plugin)));
    this.table = table;
    const before = new Set((old?.routes ?? []).map((r) => r.spec.id));
    const after = new Set(table.routes.map((r) => r.spec.id));
    const added = [...after].filter((id) => !before.has(id));
    const removed = [...before].filter((id) => !after.has(id));
    this.log.info({ routes: after.size, added: added.length, removed: removed.length }, 'route table loaded');
    this.events.emit('host:routes', { routes: after.size, added, removed });
    if (retired.length) {
      if (old) await drained(old, this.opts.drainMs ?? 2000);
      await this.plugins.disposeRetired(retired);
    }
    return { ok: true, routes: after.size, added, removed };
  }

  /** Enable or disable a plugin at once (disabled: routes answer a clear error, setup disposed). */
  async setPluginEnabled(id: string, enabled: boolean): Promise<ReloadResult> {
    if ((this.opts.builtins ?? []).some((b) => b.id === id)) return { ok: false, error: `the ${id} plugin is part of the host and cannot be disabled` };
    this.pluginState.set(id, enabled);
    return this.reload();
  }

  private contextFor(def: PluginDefinition, services: ServiceRegistry): PluginContext {
    return {
      id: def.id,
      config: validatePluginConfig(def, this.config),
      node: this.config,
      log: this.log.child({ plugin: def.id }),
      store: (collection) => this.stores.get(def.id, collection),
      auth: this.auth,
      queue: this.queue,
      events: this.events,
      health: this.health,
      gates: this.gates,
      services,
      clock: this.clock,
    };
  }

  private watch(): void {
    const schedule = () => {
      clearTimeout(this.reloadTimer);
      this.reloadTimer = setTimeout(() => void this.reload(), 50);
      this.reloadTimer.unref();
    };
    this.watcher = new ManifestWatcher(this.config.manifestsDir, schedule, this.log);
    this.watcher.start();
    this.pluginState.watch(schedule);
  }

  private unwatch(): void {
    this.watcher?.close();
    this.pluginState.unwatch();
    clearTimeout(this.reloadTimer);
  }

  /**
   * Stop: refuse new requests (503), let the ones being served finish (bounded by `graceMs`), then close
   * every connection, evict running operations, dispose plugins and compact the stores.
   */
  async close(graceMs = 3000): Promise<void> {
    this.stopping = true;
    this.ready = false;
    this.unwatch();
    for (const ws of this.wss.clients) ws.terminate();
    if (this.server) {
      const server = this.server;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      if (this.table) await drained(this.table, graceMs);
      // A handler that just returned still has its answer to write: sockets are closed as they turn idle,
      // for up to half a second, then whatever is left is cut.
      const deadline = Date.now() + 500;
      while (!(await idleAll(server, closed)) && Date.now() < deadline);
      server.closeAllConnections();
      await closed;
    }
    await this.queue.evictAll();
    await this.reloading?.catch(() => undefined);
    await this.plugins.disposeAll();
    await this.stores.close();
  }
}

/** Close idle connections; true once the server has no connection left (checked for up to 25 ms). */
async function idleAll(server: http.Server | https.Server, closed: Promise<void>): Promise<boolean> {
  server.closeIdleConnections();
  return Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 25))]);
}

function notFound(ctx: import('koa').Context): Promise<void> {
  ctx.status = 404;
  ctx.body = envelope.error({ code: 404, name: 'NotFound', message: `No route ${ctx.method} ${ctx.path} on this node` });
  return Promise.resolve();
}
