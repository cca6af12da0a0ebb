/**
 * The plugin API: the only module a plugin under plugins/ may import.
 *
 * A plugin is `plugins/<id>/index.ts` whose default export is made by `definePlugin`. Its setup receives
 * the host services and returns handlers named by its manifest. A handler gets validated input and returns
 * data (the host wraps it in the envelope) or throws an ApiError.
 */
import type { WebSocket } from 'ws';
import type { Logger } from 'pino';
import type { Datastore } from './services/store.ts';
import type { OperationsService } from './services/queue.ts';
import type { EventBus } from './services/events.ts';
import type { HealthRegistry } from './services/health.ts';
import type { Gates } from './services/gates.ts';
import type { AuthService } from './services/auth.ts';
import type { NodeConfig } from './config.ts';
import type { SseStream } from './http/sse.ts';

export { ApiError, Reply, reply } from './http/reply.ts';
export { VERSION } from './version.ts';
export type { Datastore, OperationsService, EventBus, HealthRegistry, Gates, AuthService, NodeConfig, SseStream };
export { parseConf, readConf, readCookie, cookieCandidates, type DaemonConf, type Network } from '../lib/daemon-rpc/conf.ts';
export { createRpcClient, RpcError, type RpcClient, type RpcConnection, type RpcClientOptions } from '../lib/daemon-rpc/rpc.ts';
export type { WebSocket };

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

/** What the host knows of the route being served; `meta` is the manifest route's plugin-specific `x` block. */
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
}

/** A route handler; stream routes receive their stream as the second argument (see `sse`, `websocket`). */
export type Handler = (input: HandlerInput, io?: any) => unknown;
/** `method: SSE` routes: write events to the stream; return when done, or keep it open until it closes. */
export type SseHandler = (input: HandlerInput, stream: SseStream) => unknown;
/** `method: WS` routes: the upgraded socket; the handler owns it from here. */
export type WsHandler = (input: HandlerInput, socket: WebSocket) => unknown;

/** Types an SSE route's handler. */
export const sse = (fn: SseHandler): Handler => fn as Handler;
/** Types a websocket route's handler. */
export const websocket = (fn: WsHandler): Handler => fn as Handler;

/** Services a plugin receives at setup. Everything a plugin needs from the host comes through here. */
export interface PluginContext<C = any> {
  id: string;
  /** This plugin's section of the node configuration (`<id>:`), validated by `configSchema`. */
  config: C;
  /** Read-only node-wide settings: operator id, core team, API port, data dir. */
  node: Readonly<NodeConfig>;
  log: Logger;
  /** One nedb datastore per collection, under `<dataDir>/<plugin>/<collection>.db`. */
  store(collection: string): Datastore;
  auth: AuthService;
  queue: OperationsService;
  events: EventBus;
  health: HealthRegistry;
  gates: Gates;
  /** Services other plugins provide (a plugin names them in `requires` so it is set up after them). */
  services: ServiceRegistry;
  /** The host clock; tests replace it to move time. */
  clock: Clock;
}

export interface Clock {
  now(): number;
}

export interface ServiceRegistry {
  provide<T>(name: string, impl: T): void;
  get<T>(name: string): T;
  has(name: string): boolean;
}

export interface PluginInstance {
  handlers: Record<string, Handler>;
  dispose?: () => unknown;
}

export interface PluginDefinition<C = any> {
  id: string;
  version: string;
  /** JSON Schema of this plugin's config section; defaults declared here are filled in. */
  configSchema?: Record<string, unknown>;
  /**
   * JSON Schema of the `x` block of this plugin's manifest routes (handed to handlers as `route.meta`).
   * The host checks every route against it when manifests load, and `corectl manifests validate` too;
   * without it, a route's `x` block must be absent or empty.
   */
  routeData?: Record<string, unknown>;
  /** Service names this plugin uses from other plugins (set up first). */
  requires?: string[];
  setup(ctx: PluginContext<C>): PluginInstance | Promise<PluginInstance>;
}

export function definePlugin<C = any>(def: PluginDefinition<C>): PluginDefinition<C> {
  if (!/^[a-z][a-z0-9-]*$/.test(def.id)) throw new Error(`plugin id '${def.id}' must be lowercase letters, digits and dashes`);
  return def;
}
