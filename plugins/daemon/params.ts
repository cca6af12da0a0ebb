/**
 * RPC parameters as a manifest route declares them in its `x` block:
 *
 *   x: { rpc: getblock, params: [{name: hashheight, type: string, required: true}, {name: verbosity, type: integer, default: 2}] }
 *
 * Each value is taken from the path segment of that name, else the raw-JSON body, else the query string,
 * checked (required, size, pattern, range) and coerced to the type the daemon expects, in declared order.
 * A group with `fields` becomes one object parameter (the address-index and spent-info calls take one).
 * Bad input is refused here, before the daemon is called.
 */
import { ApiError } from '../../core/plugin-api.ts';

export const PARAM_TYPES = ['string', 'integer', 'number', 'boolean', 'intflag', 'array', 'object', 'json', 'stringlist'] as const;
export type ParamType = (typeof PARAM_TYPES)[number];

export interface ParamSpec {
  name: string;
  /** Other names the value may arrive under (a POST body key that differs from the path segment). */
  from?: string[];
  /** Property name inside a `fields` group (default: name). */
  key?: string;
  type: ParamType;
  required: boolean;
  default?: unknown;
  maxLength: number;
  maxItems: number;
  pattern?: RegExp;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  fields?: ParamSpec[];
}

export interface RpcRoute {
  /** The spec's name of the call (mapped to the daemon's name by methods.ts). */
  rpc: string;
  params: ParamSpec[];
}

const DEFAULT_MAX_LENGTH = 4096;
const DEFAULT_MAX_ITEMS = 1000;
// Per route id too: a YAML alias (`x: *anchor`) hands several routes the same object.
const compiled = new WeakMap<object, Map<string, RpcRoute>>();

/** Read a route's `x` block once; a malformed block is a manifest defect (tests load every route through here). */
export function rpcRoute(meta: Record<string, unknown>, routeId: string): RpcRoute {
  let byRoute = compiled.get(meta);
  if (!byRoute) compiled.set(meta, (byRoute = new Map()));
  let r = byRoute.get(routeId);
  if (!r) {
    const rpc = meta.rpc ?? routeId.slice(routeId.indexOf('.') + 1);
    if (typeof rpc !== 'string' || !/^[a-z0-9_]{1,64}$/.test(rpc)) throw new Error(`${routeId}: x.rpc must be a method name`);
    const list = meta.params ?? [];
    if (!Array.isArray(list)) throw new Error(`${routeId}: x.params must be a list`);
    r = { rpc, params: list.map((p, i) => paramSpec(p, `${routeId}: x.params[${i}]`)) };
    byRoute.set(routeId, r);
  }
  return r;
}

const KNOWN = new Set(['name', 'from', 'key', 'type', 'required', 'default', 'maxLength', 'maxItems', 'pattern', 'enum', 'minimum', 'maximum', 'fields']);

function paramSpec(p: any, where: string): ParamSpec {
  if (!p || typeof p !== 'object') throw new Error(`${where} must be an object`);
  for (const k of Object.keys(p)) if (!KNOWN.has(k)) throw new Error(`${where}.${k} is not a known key`);
  if (typeof p.name !== 'string' || !/^[A-Za-z][A-Za-z0-9_]{0,63}$/.test(p.name)) throw new Error(`${where}.name must be an identifier`);
  const type = p.fields ? 'object' : (p.type ?? 'string');
  if (!PARAM_TYPES.includes(type)) throw new Error(`${where}.type must be one of ${PARAM_TYPES.join(', ')}`);
  const num = (k: string) => {
    if (p[k] !== undefined && typeof p[k] !== 'number') throw new Error(`${where}.${k} must be a number`);
    return p[k] as number | undefined;
  };
  if (p.from !== undefined && !(Array.isArray(p.from) && p.from.every((f: unknown) => typeof f === 'string')))
    throw new Error(`${where}.from must be a list of names`);
  if (p.enum !== undefined && !Array.isArray(p.enum)) throw new Error(`${where}.enum must be a list`);
  if (p.fields !== undefined && !Array.isArray(p.fields)) throw new Error(`${where}.fields must be a list`);
  return {
    name: p.name,
    from: p.from,
    key: p.key,
    type,
    required: p.required === true,
    default: p.default,
    maxLength: num('maxLength') ?? DEFAULT_MAX_LENGTH,
    maxItems: num('maxItems') ?? DEFAULT_MAX_ITEMS,
    pattern: p.pattern === undefined ? undefined : new RegExp(p.pattern),
    enum: p.enum,
    minimum: num('minimum'),
    maximum: num('maximum'),
    fields: p.fields?.map((f: unknown, i: number) => paramSpec(f, `${where}.fields[${i}]`)),
  };
}

export interface Sources {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
}

/** The daemon's positional parameters for this request. */
export function buildParams(route: RpcRoute, src: Sources): unknown[] {
  if (src.body !== undefined && (typeof src.body !== 'object' || src.body === null || Array.isArray(src.body)))
    throw invalid('The request body must be a JSON object of named parameters');
  const out = route.params.map((p) => valueOf(p, src));
  while (out.length && out[out.length - 1] === undefined) out.pop();
  // An omitted optional parameter before a given one: the daemons read null as "not given".
  return out.map((v) => (v === undefined ? null : v));
}

function valueOf(p: ParamSpec, src: Sources): unknown {
  if (p.fields) {
    const obj: Record<string, unknown> = {};
    for (const f of p.fields) {
      const v = valueOf(f, src);
      if (v !== undefined) obj[f.key ?? f.name] = v;
    }
    if (Object.keys(obj).length) return obj;
    if (p.required) throw invalid(`${p.fields[0]?.name ?? p.name} is required`);
    return undefined;
  }
  const raw = pick(p, src);
  if (raw === undefined) {
    if (p.default !== undefined) return p.default;
    if (p.required) throw invalid(`${p.name} is required`);
    return undefined;
  }
  return check(p, coerce(p, raw));
}

function pick(p: ParamSpec, { params, query, body }: Sources): unknown {
  for (const name of [p.name, ...(p.from ?? [])]) {
    for (const s of [params, body as Record<string, unknown> | undefined, query]) {
      const v = s?.[name];
      if (v !== undefined && v !== null && v !== '') return v;
    }
  }
  return undefined;
}

function coerce(p: ParamSpec, v: unknown): unknown {
  if (typeof v === 'string' && v.length > p.maxLength) throw invalid(`${p.name} is longer than ${p.maxLength} characters`);
  switch (p.type) {
    case 'string':
      if (typeof v === 'string') return v;
      throw invalid(`${p.name} must be a string`);
    case 'integer': {
      const n = typeof v === 'string' && /^-?\d{1,16}$/.test(v) ? Number(v) : v;
      if (typeof n === 'number' && Number.isSafeInteger(n)) return n;
      throw invalid(`${p.name} must be an integer`);
    }
    case 'number': {
      const n = typeof v === 'string' && /^-?\d{1,20}(\.\d{1,20})?([eE][-+]?\d{1,3})?$/.test(v) ? Number(v) : v;
      if (typeof n === 'number' && Number.isFinite(n)) return n;
      throw invalid(`${p.name} must be a number`);
    }
    case 'boolean':
    case 'intflag': {
      const b = v === true || v === 1 || v === 'true' || v === '1' ? true : v === false || v === 0 || v === 'false' || v === '0' ? false : undefined;
      if (b === undefined) throw invalid(`${p.name} must be true, false, 1 or 0`);
      // Zcash-based daemons read some flags as integers (getrawtransaction verbose); bitcoind reads both.
      return p.type === 'intflag' ? (b ? 1 : 0) : b;
    }
    case 'stringlist': {
      const list = typeof v === 'string' ? (v.trim().startsWith('[') ? parseJson(p, v) : v.split(',').map((s) => s.trim())) : v;
      if (!Array.isArray(list) || !list.every((s) => typeof s === 'string' && s.length > 0 && s.length <= p.maxLength))
        throw invalid(`${p.name} must be a list of strings (comma separated or a JSON array)`);
      return list;
    }
    case 'array':
    case 'object':
    case 'json': {
      const j = typeof v === 'string' ? parseJson(p, v) : v;
      if (p.type === 'array' && !Array.isArray(j)) throw invalid(`${p.name} must be a JSON array`);
      if (p.type === 'object' && (typeof j !== 'object' || j === null || Array.isArray(j))) throw invalid(`${p.name} must be a JSON object`);
      if (typeof v !== 'string' && JSON.stringify(j).length > p.maxLength) throw invalid(`${p.name} is larger than ${p.maxLength} characters of JSON`);
      return j;
    }
  }
}

function check(p: ParamSpec, v: unknown): unknown {
  if (Array.isArray(v) && v.length > p.maxItems) throw invalid(`${p.name} has more than ${p.maxItems} items`);
  if (p.pattern) {
    const values = Array.isArray(v) ? v : [v];
    if (!values.every((s) => p.pattern!.test(String(s)))) throw invalid(`${p.name} is not in the expected form`);
  }
  if (p.enum && !p.enum.includes(v)) throw invalid(`${p.name} must be one of ${p.enum.join(', ')}`);
  if (typeof v === 'number') {
    if (p.minimum !== undefined && v < p.minimum) throw invalid(`${p.name} must be at least ${p.minimum}`);
    if (p.maximum !== undefined && v > p.maximum) throw invalid(`${p.name} must be at most ${p.maximum}`);
  }
  return v;
}

function parseJson(p: ParamSpec, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw invalid(`${p.name} is not valid JSON`);
  }
}

export function invalid(message: string): ApiError {
  return new ApiError(400, 'ValidationError', message);
}
