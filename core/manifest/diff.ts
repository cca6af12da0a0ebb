/** What a manifest change would do: routes added, removed, and changed field by field. */
import type { Manifest, RouteSpec } from './parse.ts';

export interface RouteChange {
  id: string;
  kind: 'added' | 'removed' | 'changed';
  route: RouteSpec;
  /** For `changed`: field, old and new value as shown to the operator. */
  fields: { field: string; from: string; to: string }[];
}

/** Fields an operator cares about, with how each is shown. */
const FIELDS: [string, (r: RouteSpec) => unknown][] = [
  ['listener', (r) => r.listener],
  ['method', (r) => r.method],
  ['path', (r) => r.path],
  ['aliases', (r) => r.aliases],
  ['level', (r) => r.level],
  ['handler', (r) => r.handler ?? '-'],
  ['removed', (r) => r.removed],
  ['httpsOnly', (r) => r.httpsOnly],
  ['gate', (r) => r.gate ?? '-'],
  ['deprecated', (r) => r.deprecated],
  ['operation', (r) => r.operation],
  ['envelope', (r) => r.envelope],
  ['body.parser', (r) => r.body.parser],
  ['body.limit', (r) => r.body.limit],
  ['body.schema', (r) => r.body.schema ?? '-'],
  ['query', (r) => r.query],
  ['params', (r) => r.params ?? '-'],
  ['input', (r) => r.input?.schema ?? '-'],
  ['inputFrom', (r) => r.input?.from ?? '-'],
  ['statuses', (r) => r.statuses],
  ['appParam', (r) => r.appParam],
  ['summary', (r) => r.summary ?? '-'],
  ['x', (r) => r.meta],
];

const show = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));

export function diffManifests(current: Manifest[], proposed: Manifest[]): RouteChange[] {
  const before = new Map(current.flatMap((m) => m.routes).map((r) => [r.id, r]));
  const after = new Map(proposed.flatMap((m) => m.routes).map((r) => [r.id, r]));
  const out: RouteChange[] = [];
  for (const [id, r] of after) {
    const old = before.get(id);
    if (!old) {
      out.push({ id, kind: 'added', route: r, fields: [] });
      continue;
    }
    const fields = FIELDS.map(([field, get]) => ({ field, from: show(get(old)), to: show(get(r)) })).filter((f) => f.from !== f.to);
    if (fields.length) out.push({ id, kind: 'changed', route: r, fields });
  }
  for (const [id, r] of before) if (!after.has(id)) out.push({ id, kind: 'removed', route: r, fields: [] });
  const order = { removed: 0, changed: 1, added: 2 };
  return out.sort((a, b) => order[a.kind] - order[b.kind] || a.id.localeCompare(b.id));
}
