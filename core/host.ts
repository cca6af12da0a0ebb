/**
 * The host: loads the manifests of one service, sets up the plugins they name, serves the route table over
 * HTTP(S) and websockets, and swaps in changed manifests or plugin states while it serves.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import Koa from 'koa';
import { pino, type Logger } from 'pino';
import { WebSocketServer } from 'ws';
import { AuthService, ANONYMOUS } from './auth.ts';
import { bindRoute, type BoundRoute, type ChainServices } from './chain.ts';
import type { NodeConfig } from './config.ts';
import { cors } from './cors.ts';
import { ApiError, envelope, toErrorData } from './errors.ts';
import { EventBus } from './events.ts';
import { Gates } from './gates.ts';
import { HealthRegistry } from './health.ts';
import { loadManifestDir, type Manifest } from './manifest.ts';
import type { Clock, Handler, HandlerInput, PluginContext, PluginDefinition, PluginInstance, ServiceRegistry, WsHandler } from './plugin-api.ts';
import { PluginState } from './plugin-state.ts';
import { createAjv, describeError } from './schema.ts';
import { OperationsService } from './queue.ts';
import { Stores } from './store.ts';
import { buildTable, type RouteTable } from './table.ts';

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
  onHandler?: (routeId: string, caller: import('./plugin-api.ts').Caller) => void;
}

interface LoadedPlugin {
  def: PluginDefinition;
  instance?: PluginInstance;
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
  private readonly plugins = new Map<string, LoadedPlugin>();
  private readonly provided = new Map<string, unknown>();
  private readonly wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  private watcher?: fs.FSWatcher;
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
    this.chainServices = {
      auth: this.auth,
      gates: this.gates,
      queue: this.queue,
      log: this.log,
      pluginEnabled: (id) => this.plugins.get(id)?.instance !== undefined && this.pluginState.enabled(id),
      onHandler: opts.onHandler,
    };
    for (const def of opts.builtins ?? []) this.plugins.set(def.id, { def });
    this.app.use(cors());
    this.app.use(async (ctx, next) => {
      if (!this.ready) {
        ctx.status = 503;
        ctx.set('Retry-After', '1');
        ctx.body = envelope.error({ code: 503, name: 'Booting', message: 'The node has not finished booting; try again shortly' });
        return;
      }
      // Snapshot: the request finishes on the table it started with, even if a reload swaps it meanwhile.
      const table = this.table!;
      return table.middleware(ctx, next);
    });
    this.app.use(async (ctx) => {
      ctx.status = 404;
      ctx.body = envelope.error({ code: 404, name: 'NotFound', message: `No route ${ctx.method} ${ctx.path} on this node` });
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
    const res = await this.reload({ strict: true });
    if (!res.ok) throw new Error(res.error);
    this.ready = true;
    if (this.config.watch && !this.opts.inMemory) this.watch();
  }

  async listen(port = this.config.api.port, host = this.config.api.host): Promise<number> {
    const tls = this.config.api.tls;
    const handler = this.app.callback();
    this.server = tls
      ? https.createServer({ cert: fs.readFileSync(tls.cert), key: fs.readFileSync(tls.key) }, handler)
      : http.createServer(handler);
    this.server.keepAliveTimeout = 65_000;
    this.server.on('upgrade', (req, socket, head) => void this.upgrade(req, socket as any, head));
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
    const run = async (): Promise<ReloadResult> => {
      try {
        const before = new Set(this.routes.map((r) => r.spec.id));
        const manifests = loadManifestDir(this.config.manifestsDir).filter((m) => m.service === this.service);
        const table = await this.bind(manifests, opts.strict ?? false);
        this.table = table;
        const after = new Set(table.routes.map((r) => r.spec.id));
        const added = [...after].filter((id) => !before.has(id));
        const removed = [...before].filter((id) => !after.has(id));
        this.log.info({ routes: after.size, added: added.length, removed: removed.length }, 'route table loaded');
        this.events.emit('host:routes', { routes: after.size, added, removed });
        return { ok: true, routes: after.size, added, removed };
      } catch (e) {
        const error = (e as Error).message;
        this.log.error({ error }, 'manifests not loaded; the running routes are unchanged');
        return { ok: false, error };
      }
    };
    const next = (this.reloading ?? Promise.resolve()).then(run, run);
    this.reloading = next;
    return next;
  }

  /** Enable or disable a plugin at once (disabled: routes answer a clear error, setup disposed). */
  async setPluginEnabled(id: string, enabled: boolean): Promise<ReloadResult> {
    this.pluginState.set(id, enabled);
    return this.reload();
  }

  private async bind(manifests: Manifest[], strict: boolean): Promise<RouteTable> {
    const seenPlugins = new Map<string, string>();
    for (const m of manifests) {
      const other = seenPlugins.get(m.plugin);
      if (other) throw new Error(`${m.file}: plugin ${m.plugin} already has a manifest (${other})`);
      seenPlugins.set(m.plugin, m.file);
    }
    for (const m of manifests) if (!this.plugins.has(m.plugin)) this.plugins.set(m.plugin, { def: await this.importPlugin(m) });
    await this.syncInstances(new Set(seenPlugins.keys()));

    const bound: BoundRoute[] = [];
    for (const m of manifests) {
      const instance = this.plugins.get(m.plugin)!.instance;
      const used = new Set<string>();
      for (const spec of m.routes) {
        let handler: Handler | undefined;
        if (instance && spec.handler && !spec.removed) {
          handler = instance.handlers[spec.handler] as Handler | undefined;
          if (typeof handler !== 'function') throw new Error(`${spec.source}: route ${spec.id} names handler '${spec.handler}', which plugin ${m.plugin} does not export`);
          used.add(spec.handler);
        }
        bound.push(bindRoute(spec, handler));
      }
      const unused = instance ? Object.keys(instance.handlers).filter((h) => !used.has(h)) : [];
      if (unused.length) {
        const msg = `${m.file}: plugin ${m.plugin} exports handler(s) no route uses: ${unused.join(', ')}`;
        // At start this is an error; a vendor's later manifest may delete a route, which leaves its handler idle.
        if (strict) throw new Error(msg);
        this.log.warn(msg);
      }
    }
    return buildTable(manifests, bound, this.chainServices);
  }

  private async importPlugin(m: Manifest): Promise<PluginDefinition> {
    const file = path.join(this.config.pluginsDir, m.plugin, 'index.ts');
    if (!fs.existsSync(file)) throw new Error(`${m.file}: no plugin ${m.plugin} (expected ${file})`);
    const mod = await import(pathToFileURL(file).href);
    const def = mod.default as PluginDefinition;
    if (!def || typeof def.setup !== 'function' || def.id !== m.plugin)
      throw new Error(`${file}: the default export must be definePlugin({ id: '${m.plugin}', ... })`);
    return def;
  }

  /** Set up enabled plugins (in the order their required services allow) and dispose disabled ones. */
  private async syncInstances(referenced: Set<string>): Promise<void> {
    for (const [id, p] of this.plugins) {
      if (p.instance && (!this.pluginState.enabled(id) || !referenced.has(id))) {
        const inst = p.instance;
        p.instance = undefined;
        await inst.dispose?.();
        this.log.info({ plugin: id }, 'plugin disposed');
      }
    }
    let pending = [...referenced].filter((id) => this.pluginState.enabled(id) && !this.plugins.get(id)!.instance);
    while (pending.length) {
      const ready = pending.filter((id) => (this.plugins.get(id)!.def.requires ?? []).every((s) => this.provided.has(s)));
      if (!ready.length) {
        const id = pending[0];
        const missing = (this.plugins.get(id)!.def.requires ?? []).filter((s) => !this.provided.has(s));
        throw new Error(`plugin ${id} requires service(s) ${missing.join(', ')}, which no enabled plugin provides`);
      }
      for (const id of ready) {
        const p = this.plugins.get(id)!;
        p.instance = await p.def.setup(this.contextFor(p.def));
        this.log.info({ plugin: id, version: p.def.version }, 'plugin set up');
      }
      pending = pending.filter((id) => !ready.includes(id));
    }
  }

  private contextFor(def: PluginDefinition): PluginContext {
    const services: ServiceRegistry = {
      provide: (name, impl) => void this.provided.set(name, impl),
      get: <T>(name: string) => {
        if (!this.provided.has(name)) throw new Error(`service ${name} is not provided`);
        return this.provided.get(name) as T;
      },
      has: (name) => this.provided.has(name),
    };
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

  private async upgrade(req: http.IncomingMessage, socket: import('node:net').Socket, head: Buffer): Promise<void> {
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    };
    try {
      const url = new URL(req.url ?? '/', 'http://node');
      const table = this.table;
      const hit = table?.ws.map((w) => ({ w, m: w.match(url.pathname) })).find((x) => x.m);
      if (!this.ready || !hit || !hit.m) return refuse(404, 'Not Found');
      const r = hit.w.route;
      if (!this.chainServices.pluginEnabled(r.spec.plugin)) return refuse(503, 'Service Unavailable');
      const caller = req.headers.legacyidauth ? await this.auth.resolve(req.headers.legacyidauth) : ANONYMOUS;
      if (!(await this.auth.allows(r.spec.level, caller))) return refuse(401, 'Unauthorized');
      const params = hit.m.params as Record<string, string>;
      if (r.validateParams && !r.validateParams(params)) return refuse(400, 'Bad Request');
      const input: HandlerInput = {
        params,
        query: Object.fromEntries(url.searchParams),
        body: undefined,
        headers: req.headers,
        caller,
        route: r.info,
        ip: req.socket.remoteAddress ?? '',
        secure: (req.socket as any).encrypted === true,
        signal: new AbortController().signal,
        checkpoint: () => {},
      };
      this.wss.handleUpgrade(req, socket, head, (ws) => {
        Promise.resolve()
          .then(() => (r.handler as unknown as WsHandler)(input, ws))
          .catch((err) => {
            this.log.error({ err, route: r.spec.id }, 'websocket handler failed');
            ws.send(JSON.stringify(envelope.error(toErrorData(err instanceof ApiError ? err : err))));
            ws.close(1011);
          });
      });
    } catch (err) {
      this.log.error({ err }, 'websocket upgrade failed');
      refuse(400, 'Bad Request');
    }
  }

  private watch(): void {
    const schedule = () => {
      clearTimeout(this.reloadTimer);
      this.reloadTimer = setTimeout(() => void this.reload(), 150);
    };
    try {
      this.watcher = fs.watch(this.config.manifestsDir, schedule);
    } catch (e) {
      this.log.warn({ err: e }, 'cannot watch the manifests folder; reload with SIGHUP or corectl');
    }
    this.pluginState.watch(schedule);
  }

  async close(): Promise<void> {
    this.ready = false;
    this.watcher?.close();
    this.pluginState.unwatch();
    clearTimeout(this.reloadTimer);
    for (const ws of this.wss.clients) ws.terminate();
    if (this.server) {
      const server = this.server;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      });
    }
    await this.queue.evictAll();
    for (const [, p] of this.plugins) {
      const inst = p.instance;
      p.instance = undefined;
      await inst?.dispose?.();
    }
    await this.stores.close();
  }
}

const configAjv = createAjv({ useDefaults: true });

function validatePluginConfig(def: PluginDefinition, config: NodeConfig): unknown {
  const section = structuredClone((config[def.id] as object | undefined) ?? {});
  if (def.configSchema) {
    const v = configAjv.compile(def.configSchema);
    if (!v(section)) throw new Error(`${config.source}: ${describeError(def.id, v.errors![0]).text}`);
  }
  return section;
}
