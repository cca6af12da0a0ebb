/**
 * Syncthing's REST API with the key from its config.xml, re-read whenever the file changes (size or mtime):
 * an operator or Syncthing itself may change the key. Every answer the node passes on goes through
 * `redact`: the key and the GUI password hash never leave the node.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { ApiError } from '../../core/plugin-api.ts';
import { apiKeyOf } from './home.ts';

export interface StAnswer {
  status: number;
  text: string;
  json: unknown;
}

export class SyncthingClient {
  private key: string | null = null;
  private stamp = '';

  constructor(
    readonly url: string,
    readonly configFile: string,
    private readonly timeoutMs: number,
  ) {}

  /** The API key, read again when config.xml changed; null when it cannot be read. */
  apiKey(): string | null {
    try {
      const st = fs.statSync(this.configFile);
      const stamp = `${st.size}:${st.mtimeMs}:${st.ino}`;
      if (stamp !== this.stamp) {
        this.key = apiKeyOf(fs.readFileSync(this.configFile, 'utf8'));
        this.stamp = stamp;
      }
    } catch {
      this.key = null;
      this.stamp = '';
    }
    return this.key;
  }

  /** One call; `query` values are encoded here (never interpolated raw). Throws ApiError on failure. */
  async call(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, opts: { query?: Record<string, string | number | undefined>; body?: unknown; text?: string; timeoutMs?: number; cut?: 'done' } = {}): Promise<StAnswer> {
    const key = this.apiKey();
    if (!key) throw new ApiError(503, 'FileSyncUnavailable', 'Unable to read syncthing apikey');
    const u = new URL(path, this.url);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== '') u.searchParams.set(k, String(v));
    const headers: Record<string, string> = { 'X-API-Key': key };
    let body: string | undefined;
    if (opts.text !== undefined) {
      body = opts.text;
      headers['content-type'] = 'text/plain';
    } else if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    let res: { status: number; text: string };
    try {
      // Syncthing's API listener is down for a moment after each GUI change: a refused connection never
      // reached it, so any call may be sent again (up to 5 s: at load 8 on 2 cores a GET right after a GUI
      // change still found it down after 2 s). A call cut by the closing listener may have been applied:
      // only a GET is sent again, unless the caller says what a cut means (`cut: 'done'`: the GUI change
      // whose own restart cut its answer). Sending changes again is not safe: a password is hashed with a new
      // salt each time, so a resent password change restarted the listener again and cut its own answer
      // again, in a loop (seen at load 6). The key is read again for each try: a key change is a GUI change.
      // Pings are not retried: they measure.
      const retryUntil = path === '/rest/system/ping' ? 0 : Date.now() + 5000;
      for (;;) {
        try {
          headers['X-API-Key'] = this.apiKey() ?? key;
          res = await send(u, method, headers, body, opts.timeoutMs ?? this.timeoutMs);
          break;
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          const cut = code === 'ECONNRESET' || code === 'EPIPE';
          if (cut && opts.cut === 'done') {
            res = { status: 200, text: '' };
            break;
          }
          const again = code === 'ECONNREFUSED' || (method === 'GET' && cut);
          if (!again || Date.now() > retryUntil) throw e;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    } catch (e) {
      throw new ApiError(503, 'FileSyncUnavailable', `Syncthing is not running properly (${(e as Error).message === 'timeout' ? 'no answer in time' : 'not reachable'})`);
    }
    const text = res.text;
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.status >= 400) {
      const msg = redactText(text.trim(), this.apiKey() ?? key).slice(0, 500);
      throw new ApiError(res.status, 'FileSyncError', msg || `Syncthing answered ${res.status}`);
    }
    return { status: res.status, text, json };
  }

  async ping(): Promise<boolean> {
    try {
      const a = await this.call('GET', '/rest/system/ping');
      return (a.json as { ping?: string } | undefined)?.ping === 'pong';
    } catch {
      return false;
    }
  }

  async deviceId(): Promise<string> {
    const a = await this.call('GET', '/rest/system/status');
    const id = (a.json as { myID?: string } | undefined)?.myID;
    if (!id) throw new ApiError(503, 'FileSyncUnavailable', 'Syncthing is not running properly');
    return id;
  }

  /** What a handler may answer: the key's text removed, `apiKey` and `password` fields dropped. */
  redact(v: unknown): unknown {
    return redact(v, this.key);
  }
}

const SECRET_FIELDS = new Set(['apikey', 'password']);

export function redact(v: unknown, key: string | null): unknown {
  if (typeof v === 'string') return key ? redactText(v, key) : v;
  if (Array.isArray(v)) return v.map((x) => redact(x, key));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (!SECRET_FIELDS.has(k.toLowerCase())) out[k] = redact(x, key);
    return out;
  }
  return v;
}

function redactText(s: string, key: string | null): string {
  return key ? s.split(key).join('[redacted]') : s;
}

/**
 * One request on a connection of its own (no keep-alive pool): Syncthing restarts its API listener when
 * the GUI config changes, and a pooled socket it closed then failed the next call.
 */
function send(u: URL, method: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const mod = u.protocol === 'https:' ? https : http;
    const req = mod.request(u, { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        // Answers the routes pass on are small; a runaway answer is cut rather than held.
        if (size > 16 * 1024 * 1024) return void req.destroy(new Error('answer too large'));
        chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}
