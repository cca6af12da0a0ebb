/**
 * The spec's /filesync routes over Syncthing's REST API. Each route maps to one fixed Syncthing call;
 * the HTTP method comes from the route's allowed set (the manifest's enum), never from the caller raw.
 */
import { ApiError, type HandlerInput } from '../../core/plugin-api.ts';
import type { SyncthingClient } from './client.ts';
import { deviceId, folderId, isFolderId, relPath } from './ids.ts';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface HandlerDeps {
  client: () => SyncthingClient;
  /** Whether the node supervises Syncthing (it then decides the GUI address). */
  supervised: boolean;
  /** The supervised Syncthing's API listener starts so far and a wait for the next (absent when not supervised). */
  listener?: { starts: () => number; startedAfter: (starts: number, ms: number) => Promise<boolean> };
  /** Throws when the node supervises Syncthing and it is not running. */
  ready: () => void;
  promoted: (appname?: string) => Promise<unknown>;
}

export function makeHandlers(d: HandlerDeps) {
  const st = () => d.client();
  /** Syncthing's answer as data: its JSON (redacted), else its text, else the default message. */
  const answer = async (method: Method, path: string, opts: Parameters<SyncthingClient['call']>[2], done: string) => {
    const c = st();
    const a = await c.call(method, path, opts);
    if (a.json !== undefined) return c.redact(a.json);
    return a.text.trim() ? c.redact(a.text.trim()) : done;
  };
  /** Syncthing answering an authenticated ping with pong, or the reason it does not. */
  const alive = async () => {
    d.ready();
    const c = st();
    const a = await c.call('GET', '/rest/system/ping');
    if ((a.json as { ping?: string } | undefined)?.ping !== 'pong') throw new ApiError(503, 'FileSyncUnavailable', 'Syncthing is not running properly');
    return c;
  };
  const method = (v: unknown, dflt: Method): Method => (typeof v === 'string' ? (v.toUpperCase() as Method) : dflt);
  const needConfig = (v: Record<string, any>) => {
    if (!v.config || typeof v.config !== 'object') throw new ApiError(400, 'ValidationError', 'config is required');
    return v.config;
  };

  return {
    deviceid: async () => (await alive()).deviceId(),
    meta: async () => {
      const c = st();
      const a = await c.call('GET', '/meta.js');
      return c.redact(a.text);
    },
    health: async () => {
      // Syncthing 1.19 has no /rest/noauth/health: an authenticated ping answering pong is its health.
      await alive();
      return { status: 'OK' };
    },
    configFolders: async ({ values: v }: HandlerInput) => {
      const m = method(v.method, 'POST');
      const id = v.id === undefined ? undefined : folderId(v.id, true);
      if (m === 'DELETE') {
        if (!id) throw new ApiError(400, 'ValidationError', 'id is required to delete a folder');
        return answer('DELETE', `/rest/config/folders/${id}`, {}, `Folder ${id} removed`);
      }
      const config = needConfig(v);
      if (m === 'PATCH' && !id) throw new ApiError(400, 'ValidationError', 'id is required to patch a folder');
      // POST adds one folder (or a list); PUT without id replaces the list, with id one folder.
      const cfgIds = (Array.isArray(config) ? config : [config]).map((f: any) => f?.id).filter((x: unknown) => x !== undefined);
      for (const f of cfgIds) if (!isFolderId(f)) throw new ApiError(400, 'ValidationError', 'Invalid ID supplied');
      if (id && (m === 'PUT' || m === 'PATCH') && config.id !== undefined && config.id !== id) throw new ApiError(400, 'ValidationError', 'config.id differs from id');
      const path = id && m !== 'POST' ? `/rest/config/folders/${id}` : '/rest/config/folders';
      return answer(m, path, { body: config }, 'Folder configuration applied');
    },
    configGui: async ({ values: v }: HandlerInput) => {
      // The node's own Syncthing keeps its API on 127.0.0.1 where the node reaches it (filesync.guiPort):
      // an address set here would expose it or cut the node off until the next start.
      if (d.supervised && v.config && typeof v.config === 'object' && 'address' in v.config)
        throw new ApiError(400, 'ValidationError', 'The GUI address of the Syncthing this node supervises is set by the node (filesync.guiPort)');
      // Syncthing restarts its API listener after a GUI change, after it answered the change: answer once the
      // new listener serves, so the caller's next call does not meet a closing or closed port. A ping alone
      // can be answered by the old listener before it closes (the call after a password change then found
      // the port closed, in a suite run at load 8). Syncthing also throttles these restarts: measured on
      // 1.19, the first GUI change after a password change, or after about five in a few seconds, left the
      // API down 15-18 s. Hence up to 30 s here. A change that changes nothing restarts nothing: the GUI
      // section is compared before and after.
      const gui = async () => JSON.stringify((await st().call('GET', '/rest/config/gui')).json);
      const before = d.listener ? await gui() : '';
      const starts = d.listener?.starts() ?? 0;
      // An answer cut by the listener's restart is the change applied: the restart is its effect.
      const out = await answer(method(v.method, 'PUT'), '/rest/config/gui', { body: needConfig(v), cut: 'done' }, 'GUI configuration applied');
      const end = Date.now() + 30_000;
      if (d.listener) {
        // Read back on the old listener, or refused for the client's 5 s: the listener is restarting (a key
        // change was followed by 7 s and more of refusals at load 6).
        const changed = await gui().then((after) => after !== before, () => true);
        if (changed) await d.listener.startedAfter(starts, end - Date.now());
      }
      while (Date.now() < end && !(await st().ping())) await new Promise((r) => setTimeout(r, 100));
      return out;
    },
    configLdap: async ({ values: v }: HandlerInput) => answer(method(v.method, 'PUT'), '/rest/config/ldap', { body: needConfig(v) }, 'LDAP configuration applied'),
    dbIgnores: async ({ values: v, query }: HandlerInput) => {
      // The spec names `folder` a query parameter (the reference read it from the body).
      const folder = folderId(query.folder, true)!;
      const config = needConfig(v);
      return answer('POST', '/rest/db/ignores', { query: { folder }, body: config }, 'Ignores set');
    },
    dbScan: async ({ values: v }: HandlerInput) =>
      answer('POST', '/rest/db/scan', { query: { folder: folderId(v.folder, false), sub: v.sub === undefined ? undefined : relPath(v.sub, 'sub'), next: v.next }, timeoutMs: 60_000 }, 'Scan requested'),
    dbRevert: async ({ values: v }: HandlerInput) => answer('POST', '/rest/db/revert', { query: { folder: folderId(v.folder, true) } }, 'Revert requested'),
    dbPrio: async ({ values: v }: HandlerInput) => {
      const folder = folderId(v.folder, true);
      if (v.file === undefined) throw new ApiError(400, 'ValidationError', 'file parameter is mandatory');
      return answer('POST', '/rest/db/prio', { query: { folder, file: relPath(v.file, 'file') } }, 'Priority set');
    },
    dbOverride: async ({ values: v }: HandlerInput) => answer('POST', '/rest/db/override', { query: { folder: folderId(v.folder, true) } }, 'Override requested'),
    pendingDevices: async ({ values: v }: HandlerInput) =>
      answer(method(v.method, 'DELETE'), '/rest/cluster/pending/devices', { query: { device: deviceId(v.device, true) } }, 'Pending device dismissed'),
    pendingFolders: async ({ values: v }: HandlerInput) =>
      answer(method(v.method, 'DELETE'), '/rest/cluster/pending/folders', { query: { folder: folderId(v.folder, true), device: deviceId(v.device, false) } }, 'Pending folder dismissed'),
    systemError: async ({ body }: HandlerInput<string>) => {
      let text = typeof body === 'string' ? body.trim() : '';
      // A JSON `{"message": "..."}` is taken too: clients of the reference send either.
      if (text.startsWith('{')) {
        try {
          const m = JSON.parse(text)?.message;
          if (typeof m === 'string') text = m.trim();
        } catch {
          /* plain text that starts with a brace */
        }
      }
      if (!text) throw new ApiError(400, 'ValidationError', 'The error message is required');
      return answer('POST', '/rest/system/error', { text }, 'Error recorded');
    },
    systemErrorClear: async () => answer('POST', '/rest/system/error/clear', {}, 'Errors cleared'),
    systemUpgrade: async () => answer('POST', '/rest/system/upgrade', { timeoutMs: 30_000 }, 'Upgrade requested'),
    promotedFolders: async ({ values: v }: HandlerInput) => d.promoted(v.appname),
  };
}
