/** An OpenAPI 3.1 document generated from the live route table. */
import type { BoundRoute } from './chain.ts';

const ENVELOPE = {
  type: 'object',
  required: ['status', 'data'],
  properties: { status: { enum: ['success', 'error'] }, data: {} },
};

/** `/a/:x?/:y?` has no OpenAPI form with optional segments: one path per prefix of its optional params. */
function expand(p: string): { path: string; params: string[] }[] {
  const parts = p.split('/').slice(1);
  const out: { path: string; params: string[] }[] = [];
  let acc = '';
  const params: string[] = [];
  for (const seg of parts) {
    const opt = /^:[A-Za-z]\w*\?$/.test(seg);
    if (opt) out.push({ path: acc || '/', params: [...params] });
    const m = /^:([A-Za-z]\w*)\??$/.exec(seg);
    if (m) params.push(m[1]);
    acc += '/' + (m ? `{${m[1]}}` : seg);
  }
  out.push({ path: acc || '/', params });
  return out;
}

export function buildOpenApi(routes: BoundRoute[], version: string, title = 'corenode node API'): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const s = r.spec;
    const verb = s.method === 'SSE' || s.method === 'WS' ? 'get' : s.method.toLowerCase();
    for (const [i, full] of [s.path, ...s.aliases].entries()) {
      for (const { path, params } of expand(full)) {
        // A route's merged `input`: its properties are the path parameters, and the query's when it reads one.
        const input = s.input?.schema as any;
        const pschema = input?.properties ?? (s.params as any)?.properties ?? {};
        const qschema = input ? (s.input!.from.includes('query') ? (input.properties ?? {}) : {}) : typeof s.query === 'object' ? ((s.query as any).properties ?? {}) : {};
        const qreq: string[] = input ? [] : typeof s.query === 'object' ? ((s.query as any).required ?? []) : [];
        const responses: Record<string, unknown> = {
          '200': {
            description: s.method === 'SSE' ? 'event stream' : s.envelope ? 'envelope' : 'reply',
            content: s.method === 'SSE' ? { 'text/event-stream': {} } : { 'application/json': { schema: s.envelope ? ENVELOPE : {} } },
          },
        };
        for (const st of wireStatuses(r)) responses[String(st)] = { description: statusText(st) };
        const op: Record<string, unknown> = {
          operationId: i === 0 && params.length === countParams(s.path) ? s.id : `${s.id}~${path}`,
          summary: s.summary ?? s.id,
          tags: [s.plugin],
          'x-level': s.level,
          parameters: [
            ...params.map((n) => ({ name: n, in: 'path', required: true, schema: pschema[n] ?? { type: 'string' } })),
            ...Object.entries(qschema)
              .filter(([n]) => !params.includes(n))
              .map(([n, sc]) => ({ name: n, in: 'query', required: qreq.includes(n), schema: sc })),
          ],
          responses,
        };
        if (s.level !== 'public') op.security = [{ legacyidauth: [] }];
        if (s.method === 'WS') op['x-websocket'] = true;
        if (s.deprecated || i > 0) op.deprecated = true;
        if (s.removed) op['x-removed'] = s.removed;
        if (s.method === 'POST' && s.body.parser !== 'none')
          op.requestBody = {
            content: {
              [s.body.parser === 'multipart' ? 'multipart/form-data' : s.body.parser === 'text' ? 'text/plain' : 'application/json']: {
                schema: s.body.schema ?? {},
              },
            },
          };
        (paths[path] ??= {})[verb] = op;
      }
    }
  }
  return {
    openapi: '3.1.0',
    info: { title, version, description: 'Generated from the route manifests. Handled requests answer HTTP 200 with {status, data}.' },
    components: { securitySchemes: { legacyidauth: { type: 'apiKey', in: 'header', name: 'legacyidauth' } } },
    paths,
  };
}

function countParams(p: string) {
  return (p.match(/:/g) ?? []).length;
}

/** The wire statuses a route can answer besides 200: declared ones plus those the host adds. */
export function wireStatuses(r: BoundRoute): number[] {
  const s = r.spec;
  const set = new Set<number>(s.statuses);
  if (s.query === false) set.add(400);
  if (s.body.parser !== 'none') set.add(413);
  if (s.httpsOnly) set.add(403);
  if (s.gate) set.add(503);
  if (s.operation) set.add(202);
  set.add(404);
  set.add(503); // booting
  set.delete(200);
  return [...set].sort();
}

function statusText(st: number): string {
  return (
    { 202: 'Accepted: work started', 400: 'Query not accepted', 401: 'Unauthorized', 403: 'HTTPS required', 404: 'Not found', 413: 'Body too large', 429: 'Too many requests', 503: 'Not available yet' } as Record<number, string>
  )[st] ?? 'see route';
}
