/**
 * Backup and restore of a component's primary data (`<volume>/appdata`), only ever in the named app's own
 * volume, with file names derived from (app, component, type): `<volume>/backup/<type>/backup_<c>.tar.gz`.
 *
 * Backup: stop the component (event `volumes.backup.started`, so file sync pauses too), archive appdata
 * into a partial file, fsync, rename into place, start the component (`volumes.backup.finished`).
 *
 * Restore, so that any failure leaves the old data serving (the reference deleted appdata first):
 *   fetch   the archive (local, uploaded, or downloaded from a public http(s) address) — appdata untouched
 *   extract into `<volume>/.corenode-staging/restore/new` (every entry checked, bounded) — appdata untouched
 *   stop    the component; the journal says so
 *   swap    rename appdata -> staging/old, then staging/new -> appdata (both on the volume: atomic renames)
 *   start   the component; remove staging/old and the fetched archive
 * A node killed at any point recovers at its next start (and before the next restore of that component):
 * appdata missing and staging/old present -> old is renamed back; then staging is removed, and a component
 * the restore had stopped is started again. So a kill before the second rename leaves the old data, after
 * it the new data, never neither.
 */
import fs from 'node:fs';
import { ApiError, type Events, type Handler, type HandlerInput, type Log } from '../../core/plugin-api.ts';
import type { AppsService, InstalledAppView } from '../apps/api.ts';
import { packToFile, type ExtractLimits } from './archive.ts';
import { extractUnprivileged } from './extract-run.ts';
import type { ComponentLock } from './browser.ts';
import { sendFile } from './download.ts';
import { parseRemoteUrl, remoteRequest } from './remote.ts';
import { Root, withDir, writerOf, type Dir } from './safe-path.ts';
import { BACKUP_DIR, backupFileName, BACKUP_TYPES, parseBackupRef, STAGING, volumeOf, type BackupType, type VolumeTarget } from './target.ts';
import { removeTree } from './tree.ts';

const DATA = 'appdata';
const RESTORE = 'restore';
const JOURNAL = 'journal.json';
const UNITS: Record<string, number> = { B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12 };

export interface BackupDeps {
  apps: AppsService;
  events: Events;
  log: Log;
  limits: ExtractLimits;
  lock: ComponentLock;
  maxRemoteBytes: number;
  maxUploadBytes: number;
  remoteTimeoutMs: number;
  localMaxAgeMs: number;
  now: () => number;
  /** Test aid only (config `stageHoldMs`): wait this long after reporting each restore stage. */
  stageHoldMs: number;
}

export const scaled = (bytes: number, multiplier: string, decimal: number) => Number((bytes / (UNITS[multiplier] ?? 1)).toFixed(decimal));

async function backupDir(root: Root, type: BackupType, create: boolean): Promise<Dir> {
  return root.walk([BACKUP_DIR, type], { create });
}

export function backupHandlers(d: BackupDeps): Record<string, Handler> {
  const v = (i: HandlerInput) => i.values;

  /** The component a backup file reference names, in the app the route authorised. */
  const refTarget = async (i: HandlerInput) => {
    const ref = parseBackupRef(v(i).filepath);
    const t = await volumeOf(d.apps, v(i).appname, ref.component);
    return { ref, t };
  };

  return {
    getvolumedataofcomponent: async (i) => {
      const t = await volumeOf(d.apps, v(i).appname, v(i).component);
      const st = await fs.promises.statfs(t.component.mountpoint);
      const size = st.blocks * st.bsize;
      const available = st.bavail * st.bsize;
      const used = (st.blocks - st.bfree) * st.bsize;
      const m = v(i).multiplier;
      const dec = v(i).decimal;
      const all: Record<string, unknown> = {
        filesystem: `${t.component.container}COREFSVOL`,
        size: scaled(size, m, dec),
        used: scaled(used, m, dec),
        available: scaled(available, m, dec),
        capacity: size ? Number((used / size).toFixed(4)) : 0,
        mount: t.component.mountpoint,
      };
      const fields: string[] | undefined = v(i).fields;
      return fields?.length ? Object.fromEntries(fields.map((f) => [f, all[f]])) : all;
    },
    getremotefilesize: async (i) => {
      await d.apps.installed(v(i).appname).then((a) => {
        if (!a) throw new ApiError(404, 'NotFound', `Application ${v(i).appname} is not installed on this node`);
      });
      const url = parseRemoteUrl(v(i).fileurl);
      const res = await remoteRequest(url, 'HEAD', { timeoutMs: d.remoteTimeoutMs, signal: i.signal });
      res.body.resume();
      if (res.status < 200 || res.status >= 300) throw new ApiError(502, 'RemoteError', `The remote server answered HTTP ${res.status}`);
      const len = Number(res.headers['content-length']);
      if (!Number.isSafeInteger(len) || len < 0) throw new ApiError(502, 'RemoteError', 'The remote server did not give the size of the file');
      const n = scaled(len, v(i).multiplier, v(i).decimal);
      return v(i).number ? n : `${n.toFixed(v(i).decimal)} ${v(i).multiplier}`;
    },
    getlocalbackuplist: async (i) => {
      const app = await d.apps.installed(v(i).appname.split('_').pop()!);
      if (!app) throw new ApiError(404, 'NotFound', `Application ${v(i).appname} is not installed on this node`);
      const type: BackupType = v(i).path;
      const out: unknown[] = [];
      for (const c of app.components) {
        if (!c.mounted) continue;
        const dir = await backupDir(new Root(c.mountpoint), type, false).catch(() => null);
        if (!dir) continue;
        await withDir(dir, async () => {
          const st = await dir.lstat(backupFileName(c.name));
          if (!st?.isFile()) return;
          const size = scaled(st.size, v(i).multiplier, v(i).decimal);
          out.push({ component: c.name, file: `${type}/${backupFileName(c.name)}`, size: v(i).number ? size : `${size.toFixed(v(i).decimal)} ${v(i).multiplier}`, create: Math.round(st.mtimeMs) });
        });
      }
      return out;
    },
    removebackupfile: async (i) => {
      const { ref, t } = await refTarget(i);
      return withDir(backupDir(t.root, ref.type, false), async (dir) => {
        const name = backupFileName(ref.component);
        const st = await dir.lstat(name);
        if (!st) throw new ApiError(404, 'NotFound', `${v(i).filepath} does not exist`);
        await fs.promises.unlink(dir.at(name));
        return { message: `Removed ${v(i).filepath}` };
      });
    },
    downloadlocalfile: async (i) => {
      const { ref, t } = await refTarget(i);
      const dir = await backupDir(t.root, ref.type, false);
      return withDir(dir, () => sendFile(dir, backupFileName(ref.component), i.headers.range, 'application/gzip'));
    },
    fileupload: async (i) => {
      const t = await volumeOf(d.apps, v(i).appname, v(i).component);
      // The body is read only now, after the caller and level passed: an anonymous upload costs no disk.
      const bodyStream = i.bodyStream;
      if (!bodyStream) throw new ApiError(500, 'InternalError', 'fileupload must be a deferred-body route');
      if (!/^multipart\/form-data/i.test(String(i.headers['content-type'] ?? ''))) throw ApiError.badRequest('Send the archive as multipart/form-data');
      const name = backupFileName(t.component.name);
      return withDir(backupDir(t.root, 'upload', true), async (dir) => {
        const partial = `.${name}.partial`;
        await fs.promises.unlink(dir.at(partial)).catch(() => undefined);
        const out = await dir.create(partial, 0o600);
        let files = 0;
        try {
          // formidable streams the file part straight into the volume's partial file (no temp copy).
          const { default: formidable } = await import('formidable');
          const form = formidable({
            maxFiles: 1,
            maxFields: 20,
            maxFieldsSize: 64 * 1024,
            maxFileSize: d.maxUploadBytes,
            maxTotalFileSize: d.maxUploadBytes,
            allowEmptyFiles: true,
            minFileSize: 0,
            fileWriteStreamHandler: () => {
              files++;
              return writerOf(out);
            },
          });
          const req = Object.assign(bodyStream(), { headers: i.headers });
          await form.parse(req as any).catch((e: any) => {
            if (e instanceof ApiError) throw e;
            if (e?.httpCode === 413) throw new ApiError(413, 'PayloadTooLarge', `The upload is over ${d.maxUploadBytes} bytes or holds more than one file`, 413);
            throw ApiError.badRequest('The multipart body could not be parsed');
          });
          if (files !== 1) throw ApiError.badRequest('Send exactly one file (multipart/form-data)');
          await out.sync();
        } catch (e) {
          await fs.promises.unlink(dir.at(partial)).catch(() => undefined);
          throw e;
        } finally {
          await out.close();
        }
        await fs.promises.rename(dir.at(partial), dir.at(name));
        const st = await dir.lstat(name);
        return { message: `Uploaded upload/${name}`, file: `upload/${name}`, size: st?.size ?? 0 };
      });
    },
    appendbackuptask: async (i) => {
      const app = v(i).appname as string;
      const list = (v(i).backup as { component: string; backup: boolean }[]).filter((b) => b.backup);
      const targets = await Promise.all(list.map((b) => volumeOf(d.apps, app, b.component)));
      const done: unknown[] = [];
      for (const t of targets) {
        i.checkpoint();
        i.progress({ component: t.component.name, stage: 'backup', done });
        done.push(await d.lock.with(key(t), () => backupOne(d, t)));
      }
      return { message: `Backed up ${done.length} component(s) of ${app}`, backups: done };
    },
    appendrestoretask: async (i) => {
      const app = v(i).appname as string;
      const type: BackupType = v(i).type;
      const list = (v(i).restore as { component: string; restore: boolean; url?: string }[]).filter((r) => r.restore);
      const targets = await Promise.all(list.map((r) => volumeOf(d.apps, app, r.component)));
      const urls = list.map((r) => {
        if (type !== 'remote') return null;
        if (!r.url) throw ApiError.badRequest(`restore of ${r.component}: a remote restore needs url`);
        return parseRemoteUrl(r.url);
      });
      const done: unknown[] = [];
      for (let k = 0; k < targets.length; k++) {
        const t = targets[k];
        done.push(
          await d.lock.with(key(t), () =>
            restoreOne(d, t, type, urls[k], async (stage) => {
              i.progress({ component: t.component.name, stage, done });
              d.events.emit('volumes.restore.stage', { app: t.app.name, component: t.component.name, stage });
              if (d.stageHoldMs) await new Promise((r) => setTimeout(r, d.stageHoldMs));
            }, () => i.checkpoint(), i.signal),
          ),
        );
      }
      return { message: `Restored ${done.length} component(s) of ${app}`, restores: done };
    },
  };
}

const key = (t: VolumeTarget) => `${t.app.name}/${t.component.name}`;

async function backupOne(d: BackupDeps, t: VolumeTarget): Promise<unknown> {
  const ev = { app: t.app.name, component: t.component.name };
  const name = backupFileName(t.component.name);
  const partial = `.${name}.partial`;
  const wasRunning = t.component.desired === 'running';
  d.events.emit('volumes.backup.started', ev);
  await d.apps.stopComponent(t.app.name, t.component.name);
  try {
    const root = await t.root.open();
    const out = await backupDir(t.root, 'local', true);
    try {
      await fs.promises.unlink(out.at(partial)).catch(() => undefined);
      if (!(await root.lstat(DATA))?.isDirectory()) throw new ApiError(404, 'NotFound', `${t.component.name} has no appdata folder`);
      const data = await root.sub(DATA);
      try {
        const stats = await packToFile(data, (await data.list()).sort(), out, partial);
        await fs.promises.rename(out.at(partial), out.at(name));
        await out.fh.sync();
        return { component: t.component.name, file: `local/${name}`, entries: stats.entries, bytes: stats.bytes };
      } finally {
        await data.close();
      }
    } catch (e) {
      await fs.promises.unlink(out.at(partial)).catch(() => undefined);
      throw e;
    } finally {
      await Promise.all([root.close(), out.close()]);
    }
  } finally {
    if (wasRunning) await d.apps.startComponent(t.app.name, t.component.name).catch((e) => d.log.warn({ err: (e as Error).message, ...ev }, 'volumes: component not started again after backup'));
    d.events.emit('volumes.backup.finished', ev);
  }
}

/** Put a component's volume back in order after a restore that did not finish (see the file comment). */
export async function recoverRestore(d: Pick<BackupDeps, 'apps' | 'log' | 'events'>, appName: string, component: string, root: Root): Promise<boolean> {
  const top = await root.open();
  try {
    const staging = await top.sub(STAGING).catch(() => null);
    if (!staging) return false;
    try {
      if (!(await staging.lstat(RESTORE))) return false;
      const restore = await staging.sub(RESTORE);
      let journal: { stopped?: boolean; wasRunning?: boolean } = {};
      try {
        const { fh } = await restore.openRead(JOURNAL).catch(() => ({ fh: null as any }));
        if (fh) journal = JSON.parse((await fh.readFile('utf8').finally(() => fh.close())) || '{}');
      } catch {
        journal = {};
      }
      try {
        if (!(await top.lstat(DATA)) && (await restore.lstat('old'))?.isDirectory()) {
          await fs.promises.rename(restore.at('old'), top.at(DATA));
          await top.fh.sync();
          d.log.warn({ app: appName, component }, 'volumes: an unfinished restore was rolled back; the old data is in place');
        }
      } finally {
        await restore.close();
      }
      await removeTree(staging, RESTORE);
      if (journal.stopped && journal.wasRunning) await d.apps.startComponent(appName, component).catch(() => undefined);
      d.events.emit('volumes.restore.recovered', { app: appName, component });
      return true;
    } finally {
      await staging.close();
    }
  } finally {
    await top.close();
  }
}

async function writeJournal(dir: Dir, data: Record<string, unknown>): Promise<void> {
  await fs.promises.unlink(dir.at(JOURNAL)).catch(() => undefined);
  const fh = await dir.create(JOURNAL, 0o600);
  try {
    await fh.writeFile(JSON.stringify(data));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await dir.fh.sync();
}

async function restoreOne(d: BackupDeps, t: VolumeTarget, type: BackupType, url: URL | null, stage: (s: string) => Promise<void>, checkpoint: () => void, signal: AbortSignal): Promise<unknown> {
  const ev = { app: t.app.name, component: t.component.name, type };
  const name = backupFileName(t.component.name);
  await recoverRestore(d, t.app.name, t.component.name, t.root);
  const top = await t.root.open();
  const staging = await t.root.walk([STAGING], { create: true });
  let restore: Dir | null = null;
  let archiveDir: Dir | null = null;
  const wasRunning = t.component.desired === 'running';
  let stopped = false;
  try {
    await fs.promises.mkdir(staging.at(RESTORE), { mode: 0o700 });
    restore = await staging.sub(RESTORE);
    await writeJournal(restore, { stage: 'fetch', stopped: false, wasRunning });

    // 1. fetch: the archive is in place (local, upload) or downloaded into backup/remote.
    await stage('fetch');
    archiveDir = await backupDir(t.root, type, type === 'remote');
    if (type === 'remote') await download(d, url!, archiveDir, name, signal);
    checkpoint();

    // 2. extract into staging: every entry checked; the old data is untouched.
    await stage('extract');
    const { fh } = await archiveDir.openRead(name);
    try {
      await fs.promises.mkdir(restore.at('new'), { mode: 0o755 });
      const fresh = await restore.sub('new');
      try {
        await extractUnprivileged(fresh, fh, d.limits, { checkpoint, signal });
        await fresh.fh.sync();
      } finally {
        await fresh.close();
      }
    } finally {
      await fh.close();
    }
    checkpoint();

    // 3. stop the component (and its file sync, through the event).
    await stage('stop');
    await writeJournal(restore, { stage: 'stop', stopped: true, wasRunning });
    d.events.emit('volumes.restore.started', ev);
    stopped = true;
    await d.apps.stopComponent(t.app.name, t.component.name);

    // 4. swap: two renames on one file system; a kill between them is rolled back by recoverRestore.
    await stage('swap');
    if (await top.lstat(DATA)) await fs.promises.rename(top.at(DATA), restore.at('old'));
    await stage('swap-in');
    await fs.promises.rename(restore.at('new'), top.at(DATA));
    await top.fh.sync();

    // 5. start again and clean up.
    await stage('start');
    if (wasRunning) await d.apps.startComponent(t.app.name, t.component.name);
    stopped = false;
    await stage('cleanup');
    if (type !== 'local') await fs.promises.unlink(archiveDir.at(name)).catch(() => undefined);
    await restore.close();
    restore = null;
    await removeTree(staging, RESTORE);
    return { component: t.component.name, type, message: `Restored ${t.component.name} from ${type}/${name}` };
  } catch (e) {
    // Whatever failed: the old data back in place (if it was moved), the component running again.
    if (restore) await restore.close();
    restore = null;
    await recoverRestore(d, t.app.name, t.component.name, t.root).catch((err) => d.log.error({ err: (err as Error).message, ...ev }, 'volumes: recovery after a failed restore failed'));
    if (type === 'remote' && archiveDir) await fs.promises.unlink(archiveDir.at(name)).catch(() => undefined);
    if (stopped && wasRunning) await d.apps.startComponent(t.app.name, t.component.name).catch(() => undefined);
    throw e;
  } finally {
    if (restore) await restore.close();
    await archiveDir?.close();
    await staging.close();
    await top.close();
    d.events.emit('volumes.restore.finished', ev);
  }
}

/** Download `url` into `<dir>/<name>` through a partial file, bounded by maxRemoteBytes. */
async function download(d: BackupDeps, url: URL, dir: Dir, name: string, signal: AbortSignal): Promise<void> {
  const res = await remoteRequest(url, 'GET', { timeoutMs: d.remoteTimeoutMs, signal });
  if (res.status !== 200) {
    res.body.resume();
    throw new ApiError(502, 'RemoteError', `The remote server answered HTTP ${res.status}`);
  }
  const declared = Number(res.headers['content-length']);
  if (Number.isFinite(declared) && declared > d.maxRemoteBytes) {
    res.body.destroy();
    throw new ApiError(413, 'TooLarge', `The remote file is larger than ${d.maxRemoteBytes} bytes`);
  }
  const partial = `.${name}.partial`;
  await fs.promises.unlink(dir.at(partial)).catch(() => undefined);
  const out = await dir.create(partial, 0o600);
  try {
    let total = 0;
    for await (const chunk of res.body) {
      total += chunk.length;
      if (total > d.maxRemoteBytes) throw new ApiError(413, 'TooLarge', `The remote file is larger than ${d.maxRemoteBytes} bytes`);
      await out.write(chunk);
    }
    await out.sync();
  } catch (e) {
    res.body.destroy();
    await fs.promises.unlink(dir.at(partial)).catch(() => undefined);
    throw e;
  } finally {
    await out.close();
  }
  await fs.promises.rename(dir.at(partial), dir.at(name));
}

/** Remove local backups older than `localMaxAgeMs` from every mounted volume; answers how many. */
export async function cleanupLocalBackups(d: Pick<BackupDeps, 'apps' | 'localMaxAgeMs' | 'now'>): Promise<number> {
  let removed = 0;
  const apps: InstalledAppView[] = await d.apps.list();
  for (const app of apps)
    for (const c of app.components) {
      if (!c.mounted) continue;
      const dir = await backupDir(new Root(c.mountpoint), 'local', false).catch(() => null);
      if (!dir) continue;
      await withDir(dir, async () => {
        for (const n of await dir.list()) {
          const st = await dir.lstat(n);
          if (st?.isFile() && n.endsWith('.tar.gz') && d.now() - st.mtimeMs > d.localMaxAgeMs) {
            await fs.promises.unlink(dir.at(n)).catch(() => undefined);
            removed++;
          }
        }
      });
    }
  return removed;
}

export { BACKUP_TYPES };
