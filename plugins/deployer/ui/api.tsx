/**
 * Calls to the service's own routes, with the API key the way the API takes it (`Authorization: Bearer`).
 * The key lives in sessionStorage: it goes when the tab closes, and no other site can read it.
 */
const KEY = 'deployer.apiKey';

export const storedKey = (): string => sessionStorage.getItem(KEY) ?? '';
export const storeKey = (k: string) => (k ? sessionStorage.setItem(KEY, k) : sessionStorage.removeItem(KEY));

/** The service refused the key (or asked for one): the page shows the key form with this message. */
export class KeyRefused extends Error {}

/** A GET of a JSON route. Throws KeyRefused on 401, an Error with the service's message otherwise. */
export async function getJson<T>(path: string, key: string): Promise<{ status: number; body: T }> {
  const res = await fetch(path, { headers: key ? { Authorization: `Bearer ${key}` } : {}, cache: 'no-store' });
  let body: any = null;
  try {
    body = await res.json();
  } catch {
    // a proxy's HTML error page, a cut connection: said below by status
  }
  if (res.status === 401) throw new KeyRefused(typeof body?.message === 'string' ? body.message : 'Valid API key required');
  if (res.status !== 200 && res.status !== 404) throw new Error(`${path} answered HTTP ${res.status}${typeof body?.message === 'string' ? `: ${body.message}` : ''}`);
  return { status: res.status, body };
}

export interface Release {
  id: string;
  commit: string;
  commit_message: string;
  build_duration_seconds: number;
  deployed_at: string;
}

export interface Status {
  status: 'idle' | 'deploying';
  current_release?: string;
  last_deployment?: { commit: string; commit_full: string; updated_at: string; build_duration_seconds: number; build_status: string; release_id?: string; reason?: string; log?: string };
  releases?: Release[];
  last_failed_deployment?: { commit: string; commit_full: string; failed_at: string; reason: string; log?: string };
  failed_commits_count?: number;
  stage?: string;
  commit?: string;
  rollback_commit?: string;
  duration_seconds?: number;
  timeout_seconds?: number;
  progress_percent?: number;
  queue?: { pending: { commit: string; received_at: string } | null; debouncing: boolean };
}

export interface Health {
  healthy: boolean;
  app_status: string;
  app_port: number;
  supervisor_status: string;
  deployment_in_progress: boolean;
  deployment_stage: string;
}

export interface LogAnswer {
  identifier: string;
  log_file: string;
  line_count: number;
  lines: string[];
}

/** ANSI escape sequences (colours, cursor moves) of build tools: removed, the rest is shown as text. */
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;
export const stripAnsi = (s: string) => s.replace(ANSI, '');
