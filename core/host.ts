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
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { AuthService } from './services/auth.ts';
import type { BoundRoute, ChainServices } from './http/chain.ts';
import { bindManifests } from './plugins/bind.ts';
import type { NodeConfig } from './config.ts';
import { cors } from './http/cors.ts';
import { envelope } from './http/reply.ts';
import { EventBus } from './services/events.ts';
import { Gates } from './services/gates.ts';
import { HealthRegistry } from './services/health.ts';
import { OwnPortsRegistry } from './services/own-ports.ts';
import { loadManifestDir, type Manifest, type ManifestLookup } from './manifest/parse.ts';
import { builtManifestCache } from './manifest/cache.ts';
import { coreServices, type Caller, type Clock, type NodeInfo, type PluginDefinition, type ServiceRef } from './plugin-api.ts';
import { PluginSet, validatePluginConfig } from './plugins/set.ts';
import { hostPlugin } from './plugins/host-plugin.ts';
import { PluginState } from './plugins/state.ts';
import { OperationsService } from './services/queue.ts';
import { Stores } from './services/store.ts';
import { createNodeLogger, type LogFiles } from './services/logfiles.ts';
import { drained, type RouteTable } from './http/table.ts';
import { ManifestWatcher } from './manifest/watch.ts';
import { handleUpgrade } from './http/ws.ts';
import { ConnectionGuard, DEFAULT_LIMITS } from './http/connections.ts';

export interface HostOptions {
  config: NodeConfig;
  clock?: Clock;
  logger?: Logger;
  /** Manifests already checked (core/manifest/cache.ts); by default the build's, when running the build. */
  manifestCache?: ManifestLookup;
  /** Called just before any handler runs (tests). */
  onHandler?: (routeId: string, caller: Caller) => void;
}

export type ReloadResult = { ok: true; routes: number; added: string[]; removed: string[] } | { ok: false; error: string };

export class Host {
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly clock: Clock;
  readonly app = new Koa();
  readonly events = new EventBus();
  readonly health = new HealthRegistry();
  readonly gates = new Gates();
  readonly ports: OwnPortsRegistry;
  readonly auth: AuthService;
  readonly stores: Stores;
  readonly queue: OperationsService;
  readonly pluginState: PluginState;
  /** The API port's listener: HTTP, or HTTPS when `api.tls` has no port of its own. */
  server?: http.Server | https.Server;
  /** The HTTPS listener beside the HTTP one (`api.tls.port`). */
  tlsServer?: https.Server;
  /** Per-connection and all-connection bounds of the listener (set by listen()). */
  connections?: ConnectionGuard;

  private table: RouteTable | null = null;
  private ready = false;
  private stopping = false;
  readonly plugins: PluginSet;
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  private watcher?: ManifestWatcher;
  private reloadTimer?: NodeJS.Timeout;
  private reloading: Promise<ReloadResult> | null = null;
  private readonly chainServices: ChainServices;
  private logFiles?: LogFiles;

  constructor(private readonly opts: HostOptions) {
    this.config = opts.config;
    this.clock = opts.clock ?? { now: () => Date.now() };
    if (opts.logger) this.log = opts.logger;
    else ({ logger: this.log, files: this.logFiles } = createNodeLogger(this.config));
    this.stores = new Stores(this.config.dataDir, this.log);
    this.ports = new OwnPortsRegistry(() => this.apiPort, this.config.reservedPorts ?? [], () => this.httpsPort);
    this.auth = new AuthService(
      () => this.config.initial.legacyid,
      () => this.config.coreTeam,
    );
    this.queue = new OperationsService(this.stores.get('host', 'operations'), this.clock, {
      concurrency: this.config.queue.concurrency,
      retentionMs: this.config.queue.retentionSeconds * 1000,
    });
    this.pluginState = new PluginState(path.join(this.config.dataDir, 'plugins.json'), this.config.plugins);
    // The host's own routes (manifests/host.yaml) are served by a plugin built in, always on.
    const builtins = [hostPlugin(() => this.routes)];
    this.plugins = new PluginSet(builtins, {
      pluginsDir: this.config.pluginsDir,
      state: this.pluginState,
      log: this.log,
      coreService: (def, ref) => this.coreService(def, ref),
      config: (def) => validatePluginConfig(def, this.config),
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
    const corsPolicy = { origins: this.config.api.corsOrigins, apiPort: this.config.api.port };
    // One middleware: CORS, booting, then the route table (a snapshot: a request finishes on the table it
    // started with, even if a reload swaps it meanwhile; the table counts its requests, so plugins a swap
    // retires are disposed only after they are answered), else 404.
    this.app.use((ctx) => {
      if (ctx.req.headers.origin && this.config.api.cors && cors(ctx, corsPolicy)) return;
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

  get manifests(): Manifest[] {
    return this.table?.manifests ?? [];
  }

  /** Load manifests and plugins; throws on any error (a node does not start on a bad set). */
  async start(): Promise<void> {
    await this.queue.init();
    // The watchers take their fingerprint before the first load: a change during start-up is not lost,
    // and the start-up itself triggers no second load.
    if (this.config.watch) this.watch();
    const res = await this.reload({ strict: true });
    if (!res.ok) {
      this.unwatch();
      throw new Error(res.error);
    }
    this.ready = true;
  }

  /**
   * Listen on the API port: HTTP, or HTTPS when `api.tls` is set without a port; with `api.tls.port`, HTTP
   * there and HTTPS on that port too. Both listeners serve the same app through one connection guard (its
   * caps count the connections of both), with the same timeouts and websocket upgrades, and close together.
   * Returns the API port.
   */
  async listen(port = this.config.api.port, host = this.config.api.host): Promise<number> {
    const tls = this.config.api.tls;
    const api = this.config.api;
    this.connections = new ConnectionGuard(
      { ...DEFAULT_LIMITS, maxConnections: api.maxConnections, bodyIdleMs: api.bodyIdleTimeoutMs, bodyBytes: api.bodyMemoryBytes, bodyBytesPerAddress: api.bodyMemoryPerAddressBytes },
      this.log,
    );
    // Every request waits its turn on its connection (one at a time, answers read before the next runs).
    const handler = this.connections.wrap(this.app.callback());
    const secure = () => https.createServer({ cert: fs.readFileSync(tls!.cert), key: fs.readFileSync(tls!.key) }, handler);
    this.server = this.serve(tls && tls.port === undefined ? secure() : http.createServer(handler), handler);
    const bound = await listenOn(this.server, port, host);
    if (tls && tls.port !== undefined) {
      this.tlsServer = this.serve(secure(), handler) as https.Server;
      try {
        await listenOn(this.tlsServer, tls.port === 'next' ? bound + 1 : tls.port, host);
      } catch (e) {
        this.tlsServer.close();
        this.server.close();
        this.tlsServer = undefined;
        throw new Error(`api.tls.port: cannot listen for HTTPS (${(e as Error).message})`);
      }
    }
    this.log.info({ maxConnections: this.connections.cap, ...(this.tlsServer ? { httpsPort: this.httpsPort } : {}) }, 'connections capped below the descriptor limit');
    return bound;
  }

  /** One listener's settings (both listeners take the same). */
  private serve(server: http.Server | https.Server, handler: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
    // With a listener, Node no longer answers `Expect: 100-continue` itself: the chain sends 100 only when
    // it is about to read the body, so a body over the limit is refused (413) before it is sent at all.
    server.on('checkContinue', (req, res) => handler(req, res));
    // Caps connections (api.maxConnections, else below the descriptor limit) and sets server.maxConnections.
    this.connections!.attach(server);
    // A request (headers and body) must arrive within these; slow senders are cut (config api.*TimeoutMs).
    server.requestTimeout = this.config.api.requestTimeoutMs;
    server.headersTimeout = Math.min(this.config.api.headersTimeoutMs, this.config.api.requestTimeoutMs);
    // Node checks these timeouts only every connectionsCheckingInterval (30 s by default, which cut slow
    // senders at about twice the setting): check 10 times per timeout. Read when the server starts listening.
    (server as { connectionsCheckingInterval?: number }).connectionsCheckingInterval = Math.max(50, Math.min(1000, Math.floor(this.config.api.requestTimeoutMs / 10)));
    server.keepAliveTimeout = this.config.api.keepAliveTimeoutMs;
    server.maxHeadersCount = 200;
    server.on('upgrade', (req, socket, head) =>
      void handleUpgrade(
        { table: () => this.table, ready: () => this.ready, svc: this.chainServices, auth: this.auth, wss: this.wss, log: this.log },
        req,
        socket as import('node:net').Socket,
        head,
      ),
    );
    return server;
  }

  /** The port that serves HTTPS: the API port when it is TLS, else the second listener's; 0 when none. */
  get httpsPort(): number {
    const tls = this.config.api.tls;
    if (!tls) return 0;
    if (tls.port === undefined) return this.apiPort;
    const bound = (this.tlsServer?.address() as AddressInfo | null)?.port;
    if (bound) return bound;
    if (tls.port !== 'next') return tls.port;
    return this.apiPort ? this.apiPort + 1 : 0;
  }

  /** The API port: the configured one, or the one listened on when that is 0. */
  get apiPort(): number {
    return this.config.api.port || ((this.server?.address() as AddressInfo | null)?.port ?? 0);
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
      const manifests = loadManifestDir(this.config.manifestsDir, this.opts.manifestCache ?? builtManifestCache()).filter((m) => m.listener === this.config.listener);
      const referenced = new Set<string>();
      for (const m of manifests) {
        const other = manifests.find((o) => o.plugin === m.plugin && o !== m);
        if (other) throw new Error(`${m.source}: plugin ${m.plugin} already has a manifest (${other.file})`);
        referenced.add(m.plugin);
      }
      await this.plugins.importFor(manifests);
      created = await this.plugins.setUp(referenced);
      table = bindManifests(manifests, (id) => this.plugins.instance(id), (id) => this.plugins.configOf(id), strict, this.log, this.chainServices);
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
      // A reload waits this long for requests on the replaced routes before disposing retired plugins.
      if (old) await drained(old, 2000);
      await this.plugins.disposeRetired(retired);
    }
    return { ok: true, routes: after.size, added, removed };
  }

  /** Enable or disable a plugin at once (disabled: routes answer a clear error, setup disposed). */
  async setPluginEnabled(id: string, enabled: boolean): Promise<ReloadResult> {
    if (id === 'host') return { ok: false, error: `the ${id} plugin is part of the host and cannot be disabled` };
    this.pluginState.set(id, enabled);
    return this.reload();
  }

  /** A host service as plugin `def` sees it: its own log child and its own collections; the rest shared. */
  private coreService(def: PluginDefinition, ref: ServiceRef<unknown>): unknown {
    switch (ref.id) {
      case coreServices.log.id:
        return this.log.child({ plugin: def.id });
      case coreServices.store.id:
        return (collection: string) => this.stores.get(def.id, collection);
      case coreServices.node.id:
        return this.nodeInfo;
      case coreServices.clock.id:
        return this.clock;
      case coreServices.auth.id:
        return this.auth;
      case coreServices.operations.id:
        return this.queue;
      case coreServices.events.id:
        return this.events;
      case coreServices.health.id:
        return this.health;
      case coreServices.gates.id:
        return this.gates;
      case coreServices.ports.id:
        return this.ports;
    }
    throw new Error(`plugin ${def.id} depends on ${ref.id}, which the host does not offer`);
  }

  private get nodeInfo(): NodeInfo {
    const c = this.config;
    // The HTTPS facts are read when asked: a listener on port 0 learns its port only when it listens.
    const host = this;
    return Object.freeze({
      operatorId: c.initial.legacyid,
      coreTeam: Object.freeze([...c.coreTeam]),
      apiPort: c.api.port,
      apiHost: c.api.host,
      dataDir: c.dataDir,
      get httpsPort() {
        return host.httpsPort;
      },
      apiTls: !!c.api.tls && c.api.tls.port === undefined,
    });
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
    const servers = [this.server, this.tlsServer].filter((x): x is http.Server | https.Server => !!x);
    if (servers.length) {
      const closed = Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve())))).then(() => undefined);
      for (const server of servers) server.closeIdleConnections();
      if (this.table) await drained(this.table, graceMs);
      // A handler that just returned still has its answer to write: sockets are closed as they turn idle,
      // for up to half a second, then whatever is left is cut.
      const deadline = Date.now() + 500;
      while (!(await idleAll(servers, closed)) && Date.now() < deadline);
      for (const server of servers) server.closeAllConnections();
      await closed;
    }
    await this.queue.evictAll();
    await this.reloading?.catch(() => undefined);
    await this.plugins.disposeAll();
    await this.stores.close();
    await this.logFiles?.close();
  }
}

/** Close idle connections; true once the servers have no connection left (checked for up to 25 ms). */
async function idleAll(servers: (http.Server | https.Server)[], closed: Promise<void>): Promise<boolean> {
  for (const server of servers) server.closeIdleConnections();
  return Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 25))]);
}

function listenOn(server: http.Server | https.Server, port: number, host: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function notFound(ctx: import('koa').Context): Promise<void> {
  ctx.status = 404;
  ctx.body = envelope.error({ code: 404, name: 'NotFound', message: `No route ${ctx.method} ${ctx.path} on this node` });
  return Promise.resolve();
}
