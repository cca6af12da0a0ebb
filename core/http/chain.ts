/**
 * The fixed per-route chain (one compiled function per route, steps only where the route declares them):
 * HTTPS only -> removed -> plugin enabled -> gate -> query refused -> body (413) -> caller and level ->
 * input validation -> handler (or operation) -> envelope.
 */
import { Transform, type Readable } from 'node:stream';
import fs from 'node:fs';
import type { Context } from 'koa';
import type { ValidateFunction } from 'ajv';
import type { Logger } from 'pino';
import { ApiError, Reply, envelope, toErrorData } from './reply.ts';
import { declaredTooLarge, parseJsonBody, readRaw, tooLarge } from './body.ts';
import { ANONYMOUS, type AuthService } from '../services/auth.ts';
import type { Caller, PlainHandler, RouteInfo, SseHandler, WsHandler } from '../plugin-api.ts';
import type { RouteSpec } from '../manifest/parse.ts';
import type { Gates } from '../services/gates.ts';
import type { OperationsService } from '../services/queue.ts';
import { SseStream } from './sse.ts';
import { RequestInput, compileInput, inputSchema, type InputValidator } from './input.ts';
import { NO_PARAMS } from './router.ts';
import { describeError } from '../manifest/schema.ts';
import { validatorFor, type ValidatorKind } from '../built-validators.ts';
import { ALL_PLACES, decideAppName, namesApp } from './app-name.ts';

export interface ChainServices {
  auth: AuthService;
  gates: Gates;
  queue: OperationsService;
  log: Logger;
  /** Null while a plugin serves; else the message its routes answer (operators toggle it without a restart). */
  pluginRefusal(id: string): string | null;
  /** Called just before a handler runs (tests prove a refused caller never reaches one). */
  onHandler?: (routeId: string, caller: Caller) => void;
}

/** A route's handler as bound: its kind follows the route's method (checked by bindManifests). */
export type BoundHandler = { kind: 'plain'; fn: PlainHandler } | { kind: 'sse'; fn: SseHandler } | { kind: 'ws'; fn: WsHandler };

export interface BoundRoute {
  spec: RouteSpec;
  info: RouteInfo;
  handler?: BoundHandler;
  validateParams?: ValidateFunction;
  validateQuery?: ValidateFunction;
  validateBody?: ValidateFunction;
  /** The merged path, body and query input of a route that declares `input` (input.ts). */
  validateInput?: InputValidator;
}

/** The schemas a route's input is checked with, each with the ajv options of its kind (core/built-validators.ts). */
export function routeSchemas(spec: RouteSpec): RouteSchema[] {
  const out: RouteSchema[] = [];
  if (spec.params) out.push({ key: 'validateParams', kind: 'routeParams', schema: spec.params, what: 'params' });
  if (typeof spec.query === 'object') out.push({ key: 'validateQuery', kind: 'routeParams', schema: spec.query as object, what: 'query' });
  if (spec.body.schema) out.push({ key: 'validateBody', kind: 'routeBody', schema: spec.body.schema, what: 'body' });
  if (spec.input) out.push({ key: 'validateInput', kind: 'routeInput', schema: inputSchema(spec.input), what: 'input' });
  return out;
}
interface RouteSchema {
  key: 'validateParams' | 'validateQuery' | 'validateBody' | 'validateInput';
  kind: ValidatorKind;
  schema: object;
  what: string;
}

/**
 * Compiled validators by schema text. Reloads build new schema objects each time; without this, every
 * reload would compile every route again, and ajv (which caches by object) would keep each copy forever.
 */
const compiled = new Map<string, ValidateFunction>();

/**
 * A route with its validators. `lazy` (a manifest from the build's cache, whose schemas are known to
 * compile): each validator compiles on the route's first request instead of now, so a start does not
 * compile the schemas of some 370 routes most of which a node never serves (about 0.45 s of CPU, measured).
 */
export function bindRoute(spec: RouteSpec, handler: BoundHandler | undefined, lazy = false): BoundRoute {
  const compile = (kind: ValidatorKind, schema: object | undefined, what: string) => {
    if (!schema) return undefined;
    const key = `${kind}${JSON.stringify(schema)}`;
    const hit = compiled.get(key);
    if (hit) return hit;
    try {
      // The build's standalone validator for a shipped route's schema, else compiled now.
      const fn = validatorFor(kind, schema);
      compiled.set(key, fn);
      return fn;
    } catch (e) {
      throw new Error(`${spec.source}: ${what} schema of ${spec.id} does not compile: ${(e as Error).message}`);
    }
  };
  const route: BoundRoute = {
    spec,
    handler,
    info: { id: spec.id, plugin: spec.plugin, method: spec.method, path: spec.path, level: spec.level, meta: spec.meta },
  };
  for (const { key, kind, schema, what } of routeSchemas(spec)) {
    // The merged input's validator wraps the compiled schema with the host's conversions (input.ts).
    const make = (): any => (key === 'validateInput' ? compileInput(spec.input!, (s) => compile(kind, s, what)!) : compile(kind, schema, what));
    if (!lazy) route[key] = make();
    else {
      // Stands in until the first call, then puts the compiled validator in its place (a validator's
      // `errors` are read from the route's property after the call, so they are copied here once).
      let real: any;
      const first = (data: unknown) => {
        real ??= make();
        route[key] = real;
        const ok = real(data);
        (first as { errors?: unknown }).errors = real.errors;
        return ok;
      };
      route[key] = first as any;
    }
  }
  return route;
}

function send(ctx: Context, r: BoundRoute, status: number, payload: unknown) {
  ctx.status = status;
  if (payload instanceof Reply) {
    ctx.status = payload.status;
    ctx.set(payload.headers);
    ctx.body = payload.body as any;
    return;
  }
  if (r.spec.deprecated) ctx.set('Deprecation', 'true');
  // Set directly: Koa's `ctx.type =` looks the type up in the mime table on every answer.
  ctx.set('Content-Type', 'application/json; charset=utf-8');
  ctx.body = JSON.stringify(payload);
}

function fail(ctx: Context, r: BoundRoute, err: unknown, log: Logger) {
  if (!(err instanceof ApiError)) log.error({ err, route: r.spec.id }, 'handler failed');
  const data = toErrorData(err);
  // The node API answers handled errors at 200 in the envelope; plain-HTTP services (envelope: false)
  // answer with the status itself: the error's wire status, else 400 for a typed error, 500 otherwise.
  const wire =
    err instanceof ApiError && err.wireStatus ? err.wireStatus
    : r.spec.envelope ? 200
    : err instanceof ApiError ? (typeof err.code === 'number' && err.code >= 400 && err.code < 600 ? err.code : 400)
    : 500;
  if (wire === 413) ctx.set('Connection', 'close');
  send(ctx, r, wire, r.spec.envelope ? envelope.error(data) : { status: 'error', message: data.message });
}

// koa-body (with formidable) loads on the first multipart request, not at start: imported eagerly it cost
// the node about 14 MB of idle RSS and 200 ms of CPU at start (measured), for routes most nodes never have.
let koaBodyLib: Promise<typeof import('koa-body')> | undefined;
const multipart = (limit: number) => {
  let mw: ReturnType<(typeof import('koa-body'))['koaBody']> | undefined;
  return async (ctx: Context, next: () => Promise<unknown>) => {
    mw ??= (await (koaBodyLib ??= import('koa-body'))).koaBody({
      multipart: true,
      urlencoded: false,
      json: false,
      text: false,
      // Text fields count against the limit too (formidable's own default allows 20 MB of them).
      formidable: { maxFileSize: limit, maxTotalFileSize: limit, maxFieldsSize: limit },
    });
    return mw(ctx as any, next as any);
  };
};

/** Uploaded files live in the temp folder only while their request is served; handlers copy what they keep. */
function removeUploads(files: Record<string, unknown> | undefined): void {
  for (const f of Object.values(files ?? {}).flat()) {
    const p = (f as { filepath?: unknown })?.filepath;
    if (typeof p === 'string') fs.rm(p, { force: true }, () => undefined);
  }
}

/** Counts the requests being served on one route table (see table.ts `drained`). */
export interface InFlight {
  active: number;
  onIdle?: () => void;
}

/** Build the Koa middleware that serves one bound route. */
export function compileChain(r: BoundRoute, svc: ChainServices, inFlight: InFlight = { active: 0 }) {
  const { spec } = r;
  const parser = spec.body.parser;
  const limit = spec.body.limit;
  const multipartMw = parser === 'multipart' ? multipart(limit) : undefined;
  const needsCaller = spec.level !== 'public';
  const appLevel = namesApp(spec.level);
  // The places the handler reads the app name from: its merged input's, else (params, query, body) all.
  const appFrom = spec.input?.from ?? ALL_PLACES;

  return async function serve(ctx: Context): Promise<void> {
    inFlight.active++;
    let files: Record<string, unknown> | undefined;
    try {
      if (spec.httpsOnly && !ctx.secure)
        throw new ApiError(403, 'ForbiddenProtocol', 'HTTPS is required for this endpoint; plain HTTP is refused', 403);
      if (spec.removed) throw new ApiError(410, 'Gone', `${spec.path} was removed in ${spec.removed} and is no longer served`);
      const refusal = svc.pluginRefusal(spec.plugin);
      if (refusal) throw new ApiError(503, 'PluginDisabled', refusal);
      if (spec.gate && !svc.gates.holds(spec.gate))
        throw new ApiError(503, 'ServiceUnavailable', `Not available until the node holds the ${spec.gate}`, 503);
      if (spec.query === false && ctx.querystring)
        throw new ApiError(400, 'BadRequest', `${spec.path} takes no query parameters`, 400);
      // A plugin's auth strategy (an API key, say) is a header check: refused before the body is read.
      if (spec.auth) {
        const strategy = svc.auth.strategy(spec.auth);
        if (!strategy) throw new ApiError(503, 'ServiceUnavailable', `The ${spec.auth} authentication is not available on this node`, 503);
        const refusal = strategy.check(ctx.req.headers);
        if (refusal) return send(ctx, r, refusal.status, refusal);
      }

      let body: unknown;
      let rawBody: Buffer | undefined;
      if (parser !== 'none' && parser !== 'deferred') {
        if (declaredTooLarge(ctx.req, limit)) throw tooLarge(limit);
        // `Expect: 100-continue`: the client waits for this before sending; refusals above never send it.
        if (ctx.req.headers.expect === '100-continue' && !ctx.res.headersSent) ctx.res.writeContinue();
        if (multipartMw) {
          try {
            await multipartMw(ctx as any, async () => {});
          } catch (e) {
            throw /maxFileSize|maxTotalFileSize|exceeded/i.test(String((e as Error).message)) ? tooLarge(limit) : ApiError.badRequest('The multipart body could not be parsed');
          }
          body = (ctx.request as any).body ?? {};
          files = (ctx.request as any).files;
        } else {
          rawBody = await readRaw(ctx.req, limit);
          if (parser === 'raw-json') body = parseJsonBody(rawBody);
          else if (parser === 'json') {
            if (!ctx.is('json') && rawBody.length) throw ApiError.badRequest('This endpoint takes an application/json body');
            body = parseJsonBody(rawBody);
          } else if (parser === 'text') body = rawBody.toString('utf8');
          else body = rawBody;
        }
      }

      const params: Record<string, any> = ctx.params === NO_PARAMS ? {} : { ...ctx.params };
      const qs = ctx.querystring;
      const query: Record<string, any> = qs ? parseQuery(qs) : {};
      let caller: Caller = ANONYMOUS;
      const header = ctx.req.headers.legacyidauth;
      if (header) caller = await svc.auth.resolve(header);
      // One app name for the level check and the handler (app-name.ts); two different ones are refused.
      const app = appLevel ? decideAppName(spec.appParam, { path: params, query, body }, appFrom) : undefined;
      if (needsCaller && !(await svc.auth.allows(spec.level, caller, app))) throw ApiError.unauthorized();

      if (r.validateParams && !r.validateParams(params)) throw invalid('path', r.validateParams);
      if (r.validateQuery && !r.validateQuery(query)) throw invalid('query', r.validateQuery);
      if (r.validateBody && !r.validateBody(body)) throw invalid('body', r.validateBody);
      const values = r.validateInput?.({ path: params, query, body });
      // The merged input already holds this name (every place agreed); set here so it cannot be another.
      if (values && app !== undefined) values[spec.appParam] = app;

      // HEAD goes through every refusal of its GET route but runs no handler: GET handlers of the spec
      // change state (a login phrase issued, a session ended), and HEAD must not.
      if (ctx.method === 'HEAD') {
        ctx.status = 200;
        ctx.set('Content-Type', spec.method === 'SSE' ? 'text/event-stream' : 'application/json; charset=utf-8');
        return;
      }

      const input = new RequestInput(ctx, r.info, params, query, body, rawBody, files, caller, values);
      if (parser === 'deferred') {
        input.readBody = (into?: Buffer) => readDeferred(ctx, limit, into);
        input.bodyStream = () => streamDeferred(ctx, limit);
      }

      svc.onHandler?.(spec.id, caller);
      const handler = r.handler!;
      if (handler.kind === 'sse') {
        const stream = new SseStream(ctx.res);
        try {
          await handler.fn(input, stream);
        } catch (e) {
          if (!stream.opened) throw e; // refused before streaming: an ordinary answer
          svc.log.warn({ err: e, route: spec.id }, 'event stream ended with an error');
        }
        stream.open();
        stream.close();
        ctx.respond = false;
        return;
      }

      // bindManifests gives HTTP routes plain or SSE handlers only, and operations plain ones.
      if (handler.kind !== 'plain') throw new Error(`${spec.id}: a ${handler.kind} handler cannot serve this route`);
      const plain = handler.fn;
      if (spec.operation) {
        if (!caller.legacyid) throw ApiError.unauthorized();
        const op = svc.queue.start(caller.legacyid, spec.id, async (ctl) => {
          input.signal = ctl.signal;
          input.checkpoint = ctl.checkpoint;
          input.progress = ctl.progress;
          return plain(input);
        });
        ctx.set('Location', op.statusUrl);
        ctx.set('Retry-After', '2');
        send(ctx, r, 202, envelope.data({ jobId: op.jobId, statusUrl: op.statusUrl, status: op.status }));
        return;
      }

      const out = await plain(input);
      send(ctx, r, 200, out instanceof Reply || !spec.envelope ? out : envelope.data(out ?? null));
    } catch (err) {
      fail(ctx, r, err, svc.log);
    } finally {
      if (files) removeUploads(files);
      if (--inFlight.active === 0) inFlight.onIdle?.();
    }
  };
}

/** The body of a `deferred` route, read when its handler asks (413 over the limit, as for the other parsers). */
async function readDeferred(ctx: Context, limit: number, into?: Buffer): Promise<Buffer> {
  if (declaredTooLarge(ctx.req, limit)) throw tooLarge(limit);
  if (ctx.req.headers.expect === '100-continue' && !ctx.res.headersSent) ctx.res.writeContinue();
  return readRaw(ctx.req, limit, into);
}

/**
 * The body of a `deferred` route as a stream, for uploads too large to hold (the caller and level were
 * checked before): it errors with the 413 once more than the route's limit has arrived.
 */
function streamDeferred(ctx: Context, limit: number): Readable {
  if (declaredTooLarge(ctx.req, limit)) throw tooLarge(limit);
  if (ctx.req.headers.expect === '100-continue' && !ctx.res.headersSent) ctx.res.writeContinue();
  let size = 0;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      size += chunk.length;
      cb(size > limit ? tooLarge(limit) : null, size > limit ? undefined : chunk);
    },
  });
  ctx.req.on('error', (e) => counted.destroy(e));
  ctx.req.on('aborted', () => counted.destroy(new Error('client aborted the request')));
  return ctx.req.pipe(counted);
}

/** One string per key (the first when repeated); keys like `a[$ne]` stay plain strings, never objects. */
function parseQuery(qs: string): Record<string, any> {
  const out: Record<string, string> = {};
  if (!qs) return out;
  for (const [k, v] of new URLSearchParams(qs)) {
    if (Object.hasOwn(out, k)) continue;
    // `__proto__` would set the prototype instead of a key; `constructor` & co. are plain keys too.
    if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

function invalid(where: string, v: ValidateFunction): ApiError {
  return new ApiError(400, 'ValidationError', `Invalid ${where} input: ${describeError(where, v.errors![0]).text}`);
}
