/**
 * The RPC mapping a daemon route keeps in its manifest `x` block (its input is declared and validated by
 * the host from the route's `input` schema; this only says how the validated values become the call):
 *
 *   x: { rpc: getblockhashes, params: [high, low, { name: options, fields: [{ name: noorphans, key: noOrphans }] }] }
 *
 * `rpc` is the spec's name of the call (the route name when absent; lib/daemon-rpc/methods.ts maps it to
 * the daemon's own name). `params` lists the input keys in the daemon's positional order; an entry with
 * `fields` makes one object parameter (its properties named by `key`, default the field's name); `from`
 * names other input keys that give the same value (the path segment `address` for `addresses`).
 */
const NAME = { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' };
const FIELD = {
  oneOf: [
    NAME,
    {
      type: 'object',
      additionalProperties: false,
      required: ['name'],
      properties: { name: NAME, key: { type: 'string', minLength: 1, maxLength: 64 }, from: { type: 'array', items: NAME, maxItems: 8 } },
    },
  ],
};

/** The `routeData` schema of the daemon plugin: the host checks every route's `x` block against it. */
export const routeData = {
  type: 'object',
  additionalProperties: false,
  properties: {
    rpc: { type: 'string', pattern: '^[a-z0-9_]{1,64}$' },
    params: {
      type: 'array',
      maxItems: 32,
      items: {
        oneOf: [
          ...FIELD.oneOf,
          {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'fields'],
            properties: { name: NAME, fields: { type: 'array', minItems: 1, maxItems: 32, items: FIELD } },
          },
        ],
      },
    },
  },
} as const;

type Field = string | { name: string; key?: string; from?: string[] };
export type RpcParam = Field | { name: string; fields: Field[] };

export interface RpcRoute {
  rpc?: string;
  params?: RpcParam[];
}

/** The spec's name of the route's call. */
export function rpcName(meta: RpcRoute, routeId: string): string {
  return meta.rpc ?? routeId.slice(routeId.indexOf('.') + 1);
}

/** Every input key the mapping reads (tests check each is declared in the route's input schema). */
export function inputKeys(meta: RpcRoute): string[] {
  const keys = (f: Field) => (typeof f === 'string' ? [f] : [f.name, ...(f.from ?? [])]);
  return (meta.params ?? []).flatMap((p) => (typeof p === 'object' && 'fields' in p ? p.fields.flatMap(keys) : keys(p)));
}

function valueOf(f: Field, values: Record<string, unknown>): unknown {
  if (typeof f === 'string') return values[f];
  for (const name of [f.name, ...(f.from ?? [])]) if (values[name] !== undefined) return values[name];
  return undefined;
}

/** The daemon's positional parameters from the route's validated input. */
export function rpcParams(meta: RpcRoute, values: Record<string, unknown>): unknown[] {
  const out = (meta.params ?? []).map((p) => {
    if (typeof p === 'string' || !('fields' in p)) return valueOf(p, values);
    const obj: Record<string, unknown> = {};
    for (const f of p.fields) {
      const v = valueOf(f, values);
      if (v !== undefined) obj[typeof f === 'string' ? f : (f.key ?? f.name)] = v;
    }
    return Object.keys(obj).length ? obj : undefined;
  });
  while (out.length && out[out.length - 1] === undefined) out.pop();
  // An omitted optional parameter before a given one: the daemons read null as "not given".
  return out.map((v) => (v === undefined ? null : v));
}
