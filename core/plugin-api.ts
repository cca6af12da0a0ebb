/**
 * The plugin API: the only module of the host a plugin imports. It exports interfaces and a few values
 * (errors, replies, service refs), never the host's classes or the types of the libraries under them.
 *
 * A plugin is `plugins/<id>/index.ts` whose default export is made by `definePlugin`. It names what it
 * uses in `deps` (host services from `coreServices`, other plugins' services through their typed refs) and
 * receives exactly that in `setup`, with its own config section; it names what it offers others in
 * `provides` and returns the implementations. Handlers get validated input and return data (the host wraps
 * it in the envelope) or throw an ApiError.
 */
import type { Reply } from './http/reply.ts';
import type { Operation } from './services/queue.ts';

export { ApiError, Reply, reply } from './http/reply.ts';
export { VERSION } from './version.ts';
/** The module a plugin's worker thread or child process runs: compiled wherever it can be (core/paths.ts). */
export { runnableModule } from './paths.ts';

/** Permission levels a manifest route states (spec: Authentication). */
export const LEVELS = ['public', 'user', 'appowner', 'coreteam', 'admin', 'adminandcoreteam', 'appownerabove'] as const;
export type Level = (typeof LEVELS)[number];

/** Who is calling, resolved by the host from the `legacyidauth` header before the handler runs. */
export interface Caller {
  /** The wallet id of a live session; undefined for an anonymous caller. */
  legacyid?: string;
  /** The login phrase that names the caller's session. */
  loginPhrase?: string;
  authenticated: boolean;
  isAdmin: boolean;
  isCoreTeam: boolean;
  /** The caller's label as the spec's login answer names it. */
  privilege: 'none' | 'user' | 'admin' | 'coreteam';
}

/** What the host knows of the route being served; `meta` is the route's `x` block (the plugin's own data). */
export interface RouteInfo {
  id: string;
  plugin: string;
  method: string;
  path: string;
  level: Level;
  meta: Record<string, unknown>;
}

export interface HandlerInput<B = any> {
  /** Path parameters, coerced by the route's `params` schema. */
  params: Record<string, any>;
  /** Query parameters (one string per key unless the schema says otherwise), coerced by the `query` schema. */
  query: Record<string, any>;
  /**
   * The route's whole input as its manifest `input` declares it: path, body and query merged in the
   * route's `inputFrom` order, converted and validated by the host (undeclared keys dropped); else empty.
   */
  values: Record<string, any>;
  /** Parsed body (raw-json, json, text, multipart fields) validated by the body schema; undefined for none. */
  body: B;
  /** The exact bytes received, for routes whose parser is raw-json or raw (signatures are over these). */
  rawBody?: Buffer;
  /**
   * Routes whose parser is `deferred`: reads the raw body under the route's limit (413 above it). The body
   * is not read before the handler runs, so a handler can refuse a caller from its headers without
   * taking its bytes (rate limits, missing signatures, upload caps). `into`: a buffer to read into (the
   * answer is a view of it) when the body fits, so a handler can reuse a few buffers for large bodies.
   */
  readBody?: (into?: Buffer) => Promise<Buffer>;
  /** Routes whose parser is `deferred`: the raw body as a stream (uploads too large to hold); errors with the 413 past the limit. */
  bodyStream?: () => NodeJS.ReadableStream;
  /** Uploaded files of a multipart body. */
  files?: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  caller: Caller;
  route: RouteInfo;
  /** Aborted when the client goes away, or for operations when the caller cancels. */
  signal: AbortSignal;
  ip: string;
  secure: boolean;
  /** Operations only: throws a Canceled error at a safe point once the caller asked to cancel. */
  checkpoint: () => void;
  /** Operations only: what the work has done so far; polls of the operation show it as `progress`. */
  progress: (p: unknown) => void;
}

/** A server-sent event stream (`method: SSE` routes). Headers go out with the first event. */
export interface EventStream {
  send(event: string, data: unknown, id?: number | string): void;
  comment(text: string): void;
  /** Resolves when the client goes away or the stream is closed. */
  done(): Promise<void>;
  close(): void;
  readonly isClosed: boolean;
}

/** An upgraded websocket (`method: WS` routes): the part of the socket a handler uses. */
export interface Socket {
  readonly readyState: number;
  /** Bytes sent and not yet written out to the client. */
  readonly bufferedAmount: number;
  send(data: string | Buffer, cb?: (err?: Error) => void): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  on(event: 'message', fn: (data: Buffer, isBinary: boolean) => void): this;
  on(event: 'close', fn: (code: number, reason: Buffer) => void): this;
  on(event: 'error', fn: (err: Error) => void): this;
  once(event: 'close', fn: (code: number, reason: Buffer) => void): this;
  once(event: 'message', fn: (data: Buffer, isBinary: boolean) => void): this;
}

export type PlainHandler = (input: HandlerInput) => unknown;
export type SseHandler = (input: HandlerInput, stream: EventStream) => unknown;
export type WsHandler = (input: HandlerInput, socket: Socket) => unknown;

/**
 * A route handler of one kind. The manifest route's method decides the kind it needs (SSE, WS, else plain);
 * binding a handler of another kind is a manifest error, so the chain never guesses.
 */
export type Handler =
  | PlainHandler
  | { readonly kind: 'sse'; readonly fn: SseHandler }
  | { readonly kind: 'ws'; readonly fn: WsHandler };

/** An SSE route's handler: write events to the stream; return when done, or keep it open until it closes. */
export const sse = (fn: SseHandler): Handler => ({ kind: 'sse', fn });
/** A websocket route's handler: the upgraded socket; the handler owns it from here. */
export const websocket = (fn: WsHandler): Handler => ({ kind: 'ws', fn });

// ---------------------------------------------------------------------------------------------------------
// Host services

/** Structured log lines (`log.info({ key: value }, 'message')`). */
export interface Log {
  trace(obj: unknown, msg?: string): void;
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  child(bindings: Record<string, unknown>): Log;
}

export interface Clock {
  now(): number;
}

/** A query over a collection: chain `sort`, `skip`, `limit`, then await it. */
export interface Cursor<T> extends PromiseLike<T[]> {
  sort(spec: Record<string, 1 | -1>): Cursor<T>;
  skip(n: number): Cursor<T>;
  limit(n: number): Cursor<T>;
  exec(): Promise<T[]>;
}

export type Query = Record<string, unknown>;

/** One collection of documents on disk (embedded, append-only, compacted at start and stop). */
export interface Collection<T = any> {
  insert(doc: T): Promise<T & { _id: string }>;
  insert(docs: T[]): Promise<(T & { _id: string })[]>;
  find(query: Query, projection?: Record<string, 0 | 1>): Cursor<T>;
  findOne(query: Query, projection?: Record<string, 0 | 1>): Promise<T | null>;
  count(query: Query): Promise<number>;
  update(query: Query, update: unknown, options?: { multi?: boolean; upsert?: boolean; returnUpdatedDocs?: boolean }): Promise<any>;
  remove(query: Query, options?: { multi?: boolean }): Promise<number>;
  ensureIndex(options: { fieldName: string | string[]; unique?: boolean; sparse?: boolean; expireAfterSeconds?: number }): Promise<void>;
  removeIndex(fieldName: string | string[]): Promise<void>;
  /** Re-read the collection from its file (after a failed write, to drop what did not reach the disk). */
  load(): Promise<void>;
  /**
   * Rewrite the file from what the collection holds now: the lines of changed and removed records are gone
   * (the host's stores have it; a bare in-memory datastore in a test has no file to rewrite).
   */
  compact?(): Promise<void>;
}

/** The plugin's collections, one file each under `<dataDir>/<plugin>/<collection>.db`. */
export type Stores = (collection: string) => Collection;

/** Read-only node-wide facts a plugin may use; another plugin's config section is not among them. */
export interface NodeInfo {
  /** The operator's id (level admin); '' when not configured. */
  operatorId: string;
  coreTeam: readonly string[];
  /** The port and address of the listener the node API serves on. */
  apiPort: number;
  apiHost: string;
  /**
   * The port this node serves HTTPS on: the API port when `api.tls` has no port of its own (HTTPS only),
   * else `api.tls.port` beside plain HTTP on the API port; 0 when the node serves no HTTPS.
   */
  readonly httpsPort: number;
  /** Whether the API port itself speaks TLS (HTTPS only). */
  apiTls: boolean;
  /** The node's data folder; a plugin keeps its files under `<dataDir>/<plugin id>/`. */
  dataDir: string;
}

export interface CheckResult {
  ok: boolean;
  message?: string;
  detail?: unknown;
}

export interface CheckReport extends CheckResult {
  name: string;
  required: boolean;
  durationMs: number;
}

/** Fitness checks: `/core/health` lists them; a failing required one refuses login phrases. */
export interface Health {
  register(name: string, fn: () => CheckResult | boolean | Promise<CheckResult | boolean>, opts?: { required?: boolean; timeoutMs?: number }): () => void;
  run(opts?: { requiredOnly?: boolean }): Promise<{ healthy: boolean; checks: CheckReport[] }>;
}

export interface NodeEvent {
  id: number;
  name: string;
  data: unknown;
}

/** The node's event bus; the event stream replays the last events by id. */
export interface Events {
  emit(name: string, data?: unknown): NodeEvent;
  on(name: string, fn: (ev: NodeEvent) => void): () => void;
  since(lastId: number): NodeEvent[];
}

/** A port the node or a service beside it listens on, and what uses it (named in refusals). */
export interface OwnPort {
  port: number;
  what: string;
}

/**
 * The node's own ports: the API port and its neighbours, the operator's `reservedPorts`, and what each
 * plugin claims for its services (file-sync GUI and sync ports, daemon RPC and P2P ports). Apps may not
 * publish any of them.
 */
export interface OwnPorts {
  /** Claim ports for `what` (a plugin's service); returns the function that drops the claim. */
  claim(what: string, ports: number[]): () => void;
  list(): OwnPort[];
  /** What uses `port` on this node, or undefined when it is none of the node's own. */
  whose(port: number): string | undefined;
}

/** Named conditions routes wait on (`gate:` in a manifest): 503 until the condition holds. */
export interface Gates {
  set(name: string, holds: boolean): void;
  holds(name: string): boolean;
}

export type { Operation, OperationStatus, Problem } from './services/queue.ts';

/** Long-running work started by a caller; `manifest: operation: true` routes use it through the host. */
export interface Operations {
  get(jobId: string, owner: string | undefined): Operation | null;
  cancel(jobId: string, owner: string | undefined): Operation | null;
}

/** A wallet session as the identity plugin resolves it from the `legacyidauth` header. */
export interface Session {
  legacyid: string;
  loginPhrase: string;
}

export interface AuthHeader {
  legacyid: string;
  signature: string;
  loginPhrase: string;
}

/**
 * An auth strategy: decides from a request's headers whether the caller passes (hapi's schemes). A route
 * names the strategy in its manifest (`auth:`); the session levels are the host's own strategy.
 */
export interface AuthStrategy {
  /** Null when the request passes; else the reply the route answers (`reply(401, {...})`), as it is. */
  check(headers: Record<string, string | string[] | undefined>): Reply | null;
}

/** Callers and levels: who a session is, and the lookups plugins plug in. */
export interface Auth {
  /** The identity plugin's session lookup; returns the function that removes it again. */
  useSessionResolver(fn: (auth: AuthHeader) => Session | null | Promise<Session | null>): () => void;
  /** The app registry's owner lookup behind the appowner levels; returns the remover. */
  useAppOwnerLookup(fn: (appName: string) => string | null | undefined | Promise<string | null | undefined>): () => void;
  /** An auth strategy routes may name (`auth: <name>`); returns the remover. */
  useStrategy(name: string, strategy: AuthStrategy): () => void;
  parseHeader(value: string | string[] | undefined): AuthHeader | null;
  callerFor(session: Session): Caller;
  privilegeOf(legacyid: string): 'admin' | 'coreteam' | 'user';
  isOperator(legacyid: string | undefined): boolean;
  isCoreTeam(legacyid: string | undefined): boolean;
}

// ---------------------------------------------------------------------------------------------------------
// Typed dependencies (Backstage's service refs)

/** A typed name of a service: `deps: { daemon: daemonService }` hands the plugin a `T`. */
export interface ServiceRef<T> {
  readonly id: string;
  /** Type carrier only; never set. */
  readonly T?: T;
}

export function createServiceRef<T>(id: string): ServiceRef<T> {
  return Object.freeze({ id });
}

/** A dep the plugin works without: it receives `() => T | undefined`, looked up at each call. */
export interface OptionalRef<T> extends ServiceRef<T> {
  readonly optional: true;
}

/**
 * `deps: { payments: optional(explorerPayments) }`: the plugin is set up whether or not a running plugin
 * provides it, and asks for it when it needs it (a provider disabled later is then simply absent).
 */
export function optional<T>(ref: ServiceRef<T>): OptionalRef<T> {
  return Object.freeze({ id: ref.id, optional: true as const });
}

/** The host's services, by the name a plugin's `deps` uses. */
export const coreServices = {
  log: createServiceRef<Log>('core.log'),
  clock: createServiceRef<Clock>('core.clock'),
  node: createServiceRef<NodeInfo>('core.node'),
  store: createServiceRef<Stores>('core.store'),
  auth: createServiceRef<Auth>('core.auth'),
  operations: createServiceRef<Operations>('core.operations'),
  events: createServiceRef<Events>('core.events'),
  health: createServiceRef<Health>('core.health'),
  gates: createServiceRef<Gates>('core.gates'),
  ports: createServiceRef<OwnPorts>('core.ports'),
} as const;

type Resolved<D> = { [K in keyof D]: D[K] extends OptionalRef<infer T> ? () => T | undefined : D[K] extends ServiceRef<infer T> ? T : never };

/** What `setup` receives: the plugin's id and config section, and exactly the services it named. */
export type PluginContext<C, D> = { readonly id: string; readonly config: C } & Resolved<D>;

export interface PluginInstance<P = {}> {
  handlers: Record<string, Handler>;
  /** Implementations of the services named in `provides`. */
  services?: Resolved<P>;
  dispose?: () => unknown;
}

/** A config section's JSON Schema, carrying the section's type (see `configSchema`). */
export type ConfigSchema<C> = Record<string, unknown> & { readonly __config?: C };

/** Brands a plugin's config JSON Schema with the type of the section it validates, so `ctx.config` is typed. */
export function configSchema<C>(schema: object): ConfigSchema<C> {
  return schema as ConfigSchema<C>;
}

export interface PluginDefinition<C = any, D extends Record<string, ServiceRef<any>> = any, P extends Record<string, ServiceRef<any>> = any> {
  id: string;
  version: string;
  /** JSON Schema of this plugin's config section (made with `configSchema<C>()`); defaults are filled in. */
  configSchema?: ConfigSchema<C>;
  /**
   * Environment variables bound to keys of the config section (`{ GIT_REPO_URL: 'repoUrl' }`): a set
   * variable overrides the file, converted by the key's schema type; errors name the variable.
   */
  env?: Record<string, string>;
  /**
   * JSON Schema of the `x` block of this plugin's manifest routes (handed to handlers as `route.meta`).
   * The host checks every route against it when manifests load, and `corectl manifests validate` too;
   * without it, a route's `x` block must be absent or empty.
   */
  routeData?: Record<string, unknown>;
  /** What the plugin uses: host services (`coreServices`) and other plugins' services (their refs). */
  deps?: D;
  /** What the plugin offers other plugins, by ref; `setup` returns the implementations under the same keys. */
  provides?: P;
  setup(ctx: PluginContext<C, D>): PluginInstance<P> | Promise<PluginInstance<P>>;
}

export function definePlugin<C = {}, D extends Record<string, ServiceRef<any>> = {}, P extends Record<string, ServiceRef<any>> = {}>(
  def: PluginDefinition<C, D, P>,
): PluginDefinition<C, D, P> {
  if (!/^[a-z][a-z0-9-]*$/.test(def.id)) throw new Error(`plugin id '${def.id}' must be lowercase letters, digits and dashes`);
  return def;
}
