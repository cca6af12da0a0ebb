/**
 * What a handler receives for one HTTP request. A class rather than an object literal: one fixed shape,
 * no closures per request, and the costly parts (the abort signal: an AbortController plus a socket
 * listener; the client address) are made only when a handler reads them.
 */
import type { Context } from 'koa';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Caller, HandlerInput, RouteInfo } from '../plugin-api.ts';
import { ApiError } from './reply.ts';

const NOOP = () => {};
const EMPTY: Record<string, any> = Object.freeze({});

export class RequestInput implements HandlerInput {
  readonly headers: Record<string, string | string[] | undefined>;
  checkpoint: () => void = NOOP;
  progress: (p: unknown) => void = NOOP;
  readBody?: (into?: Buffer) => Promise<Buffer>;
  bodyStream?: () => import('node:stream').Readable;
  #ctx: Context;
  #signal?: AbortSignal;

  constructor(
    ctx: Context,
    readonly route: RouteInfo,
    public params: Record<string, any>,
    public query: Record<string, any>,
    public body: any,
    public rawBody: Buffer | undefined,
    public files: Record<string, unknown> | undefined,
    public caller: Caller,
    /** The merged, validated input of a route that declares `input` (else empty). */
    public values: Record<string, any> = EMPTY,
  ) {
    this.#ctx = ctx;
    this.headers = ctx.req.headers;
  }

  /** Aborted when the client goes away before the answer is sent. */
  get signal(): AbortSignal {
    return (this.#signal ??= abortOnClose(this.#ctx));
  }

  set signal(v: AbortSignal) {
    this.#signal = v;
  }

  get ip(): string {
    return this.#ctx.ip;
  }

  get secure(): boolean {
    return this.#ctx.secure;
  }
}

function abortOnClose(ctx: Context): AbortSignal {
  const ac = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) ac.abort(new Error('client closed the connection'));
  });
  return ac.signal;
}

/** Where a route's merged input comes from, first source first (manifest `inputFrom`). */
export type InputSource = 'path' | 'body' | 'query';

export interface InputSpec {
  from: InputSource[];
  /** JSON Schema of the merged object (manifest `input`), shared `$ref`s already inlined. */
  schema: Record<string, any>;
}

export type InputValidator = (sources: { path: Record<string, unknown>; query: Record<string, unknown>; body: unknown }) => Record<string, any>;

const INTEGER = /^-?\d{1,16}$/;
const NUMBER = /^-?\d{1,20}(\.\d{1,20})?([eE][-+]?\d{1,3})?$/;
const TRUE = new Set<unknown>([true, 1, 'true', '1']);
const FALSE = new Set<unknown>([false, 0, 'false', '0']);

type Convert = (v: unknown) => unknown;

/**
 * Compile a route's `input` once at load: per declared property, how a string from a path segment or query
 * string becomes its type; then the schema (ajv, strict). The host converts rather than ajv's coerceTypes:
 * ajv reads '1e3' and '99999999999999999999' as integers, and a daemon must get exactly what was typed.
 */
/** The JSON Schema the merged input of a route declaring `spec` is validated with. */
export const inputSchema = (spec: InputSpec): object => ({ type: 'object', ...spec.schema });

export function compileInput(spec: InputSpec, compile: (schema: object) => ValidateFunction): InputValidator {
  const props: Record<string, any> = spec.schema.properties ?? {};
  const convert = new Map<string, Convert>();
  for (const [name, s] of Object.entries(props)) {
    const c = converter(name, s);
    if (c) convert.set(name, c);
  }
  const validate = compile(inputSchema(spec));
  const useBody = spec.from.includes('body');
  // `additionalProperties: false` on the input refuses an undeclared key instead of dropping it (ajv's
  // removeAdditional would drop it silently): routes that must answer 400 to `?limit[$gt]=0` say so.
  const closed = spec.schema.additionalProperties === false && !spec.schema.patternProperties ? new Set(Object.keys(props)) : null;

  return ({ path, query, body }) => {
    if (useBody && body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
      throw invalidInput('The request body must be a JSON object of named parameters');
    // Null prototype: a `__proto__` key is a plain key here, never the object's prototype.
    const merged: Record<string, unknown> = Object.create(null);
    for (const from of spec.from) {
      const src = (from === 'path' ? path : from === 'query' ? query : body) as Record<string, unknown> | undefined;
      if (!src) continue;
      for (const k of Object.keys(src)) {
        const v = src[k];
        // An empty value counts as not given (`?a=` and a null body key), so the next source may give it.
        if (merged[k] === undefined && v !== undefined && v !== null && v !== '') merged[k] = v;
      }
    }
    if (closed) for (const k of Object.keys(merged)) if (!closed.has(k)) throw invalidInput(`Invalid ${sourceOf(k)} input: ${k} is not a known key`);
    try {
      for (const [name, c] of convert) if (merged[name] !== undefined) merged[name] = c(merged[name]);
    } catch (e) {
      if (!(e instanceof InputProblem)) throw e;
      throw invalidInput(`Invalid ${sourceOf(e.key)} input: ${e.message}`);
    }
    if (!validate(merged)) {
      const err = validate.errors![0];
      const key = err.keyword === 'required' ? undefined : err.instancePath.split('/')[1];
      const where = key ? sourceOf(key) : '';
      throw invalidInput(`Invalid ${where ? `${where} ` : ''}input: ${describeInputError(err, props)}`);
    }
    return merged;

    /** Which source gave a key (for the message: `Invalid query input: ...`), found only when refusing. */
    function sourceOf(key: string): InputSource | '' {
      for (const from of spec.from) {
        const src = (from === 'path' ? path : from === 'query' ? query : body) as Record<string, unknown> | undefined;
        const v = src?.[key];
        if (v !== undefined && v !== null && v !== '') return from;
      }
      return '';
    }
  };
}

/** A value a host conversion refused: `<key> <reason>`. */
class InputProblem extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

function converter(name: string, s: any): Convert | undefined {
  if (!s || typeof s !== 'object') return undefined;
  const fail = (text: string) => () => {
    throw new InputProblem(name, `${name} ${s.errorMessage ?? text}`);
  };
  const json = (v: unknown) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v);
    } catch {
      return fail('is not valid JSON')();
    }
  };
  if (s.coerce === 'json') return json;
  if (s.coerce === 'list') return (v) => (typeof v !== 'string' ? v : v.trim().startsWith('[') ? json(v) : v.split(',').map((x) => x.trim()));
  if (s.coerce === 'flag' || s.type === 'boolean') {
    const bad = fail('must be true, false, 1 or 0');
    return (v) => (TRUE.has(v) ? (s.coerce === 'flag' ? 1 : true) : FALSE.has(v) ? (s.coerce === 'flag' ? 0 : false) : bad());
  }
  if (s.type === 'integer') {
    const bad = fail('must be an integer');
    // JSON numbers beyond 2^53 have already lost digits: refused like any non-integer.
    return (v) => (typeof v === 'string' ? (INTEGER.test(v) && Number.isSafeInteger(Number(v)) ? Number(v) : bad()) : typeof v === 'number' && !Number.isSafeInteger(v) ? bad() : v);
  }
  if (s.type === 'number') {
    const bad = fail('must be a number');
    return (v) => (typeof v === 'string' ? (NUMBER.test(v) ? Number(v) : bad()) : v);
  }
  return undefined;
}

const TYPE_TEXT: Record<string, string> = {
  integer: 'must be an integer',
  number: 'must be a number',
  boolean: 'must be true, false, 1 or 0',
  string: 'must be a string',
  array: 'must be a JSON array',
  object: 'must be a JSON object',
};

/** `<name> <reason>` in the words of the node API (`n is required`, `hex is longer than 40000 characters`). */
export function describeInputError(e: ErrorObject, props: Record<string, any>): string {
  const segments = e.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') segments.push(String(e.params.missingProperty));
  if (e.keyword === 'additionalProperties') segments.push(String(e.params.additionalProperty));
  const top = segments[0];
  const name = segments.filter((s) => !/^\d+$/.test(s)).join('.') || 'the input';
  const own = top !== undefined ? props[top] : undefined;
  if (own?.errorMessage && e.keyword !== 'required') return `${top} ${own.errorMessage}`;
  const inList = segments.length > 1 && /^\d+$/.test(segments[1]) && segments.length === 2;
  if (inList && own?.coerce === 'list' && (e.keyword === 'type' || e.keyword === 'minLength'))
    return `${name} must be a list of strings, none empty (comma separated or a JSON array)`;
  const p = e.params as Record<string, any>;
  switch (e.keyword) {
    case 'required':
      return `${name} is required`;
    case 'additionalProperties':
      return `${name} is not a known key`;
    case 'type':
      return `${name} ${TYPE_TEXT[String(p.type)] ?? `must be ${p.type}`}`;
    case 'maxLength':
      return `${name} is longer than ${p.limit} characters`;
    case 'minLength':
      return p.limit === 1 ? `${name} must not be empty` : `${name} is shorter than ${p.limit} characters`;
    case 'maxItems':
      return `${name} has more than ${p.limit} items`;
    case 'minItems':
      return `${name} has fewer than ${p.limit} items`;
    case 'pattern':
    case 'format':
      return `${name} is not in the expected form`;
    case 'enum':
      return `${name} must be one of ${p.allowedValues.join(', ')}`;
    case 'const':
      return `${name} must be ${JSON.stringify(p.allowedValue)}`;
    case 'minimum':
      return `${name} must be at least ${p.limit}`;
    case 'maximum':
      return `${name} must be at most ${p.limit}`;
    case 'exclusiveMinimum':
      return `${name} must be greater than ${p.limit}`;
    case 'exclusiveMaximum':
      return `${name} must be less than ${p.limit}`;
    default:
      return `${name} ${e.message ?? 'is invalid'}`;
  }
}

function invalidInput(message: string): ApiError {
  return new ApiError(400, 'ValidationError', message);
}
