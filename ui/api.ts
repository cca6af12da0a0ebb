/**
 * Calls to the node's routes. The page is served by the node itself (same origin), or on the UI port,
 * whose index names the API port in `<meta name="corenode-api">`; every call carries the session's
 * `legacyidauth` header when there is one. The envelope is unwrapped here: a page gets the data or an
 * ApiFailure with the node's own error name and message.
 */
import { apiBase } from './base.ts';
import { session } from './session.ts';

export { apiBase, wsUrl } from './base.ts';

export class ApiFailure extends Error {
  constructor(
    readonly code: number | string,
    readonly errorName: string,
    message: string,
  ) {
    super(message);
  }
}

export interface CallOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  signal?: AbortSignal;
  /** Send without the session header (login itself). */
  anonymous?: boolean;
}

export async function call<T = unknown>(path: string, opts: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = {};
  const s = session.get();
  if (s && !opts.anonymous) headers.legacyidauth = s.header;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(apiBase + path, {
    method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: opts.signal,
  });
  let env: { status?: string; data?: any } | undefined;
  try {
    env = await res.json();
  } catch {
    if (res.status === 404) throw new ApiFailure(404, 'NotServed', 'this node does not serve it (its plugin is not installed)');
    throw new ApiFailure(res.status, 'HttpError', `The node answered HTTP ${res.status}`);
  }
  if (env?.status === 'success') return env.data as T;
  const d = env?.data ?? {};
  const failure = new ApiFailure(d.code ?? res.status, d.name ?? 'Error', d.message ?? `The node answered HTTP ${res.status}`);
  // A session the node no longer knows (logged out elsewhere, expired): forget it here too.
  if (failure.code === 401 && s && !opts.anonymous) session.check();
  throw failure;
}

/**
 * A route answering newline-delimited JSON progress (remove, redeploy): the last line says how it ended,
 * `{status: 'success'|'error', data}`; a refusal before the stream starts is an ordinary envelope.
 */
export async function callProgress(path: string): Promise<unknown> {
  const s = session.get();
  const res = await fetch(apiBase + path, { headers: s ? { legacyidauth: s.header } : {} });
  const lines = (await res.text()).split('\n').filter(Boolean);
  let last: { status?: string; data?: any } | undefined;
  try {
    last = JSON.parse(lines[lines.length - 1] ?? 'null');
  } catch {
    throw new ApiFailure(res.status, 'HttpError', `The node answered HTTP ${res.status}`);
  }
  if (last?.status === 'success') return typeof last.data === 'string' ? last.data : 'Done';
  const d = last?.data ?? {};
  throw new ApiFailure(d.code ?? res.status, d.name ?? 'Error', d.message ?? (typeof d === 'string' ? d : `The node answered HTTP ${res.status}`));
}
