/**
 * The volume browser (GET routes) and the file operations (operations: move, copy, compress, extract).
 * Every path goes through target.ts and safe-path.ts; every folder is reached through descriptors.
 */
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { ApiError, reply, type HandlerInput, type Handler } from '../../core/plugin-api.ts';
import type { AppsService } from '../apps/api.ts';
import { packStream, packToFile, type ExtractLimits } from './archive.ts';
import { extractUnprivileged } from './extract-run.ts';
import { sendFile } from './download.ts';
import { parseName, PathRefused, withDir, walkError, type Dir } from './safe-path.ts';
import { keepMountRoots, STAGING, volumeOf, volumePath } from './target.ts';
import { copyTree, listInfo, removeTree } from './tree.ts';

export interface BrowserDeps {
  apps: AppsService;
  limits: ExtractLimits;
  /** One long-running job per component at a time (backup, restore, extraction). */
  lock: ComponentLock;
}

export class ComponentLock {
  private readonly held = new Set<string>();
  async with<T>(key: string, fn: () => Promise<T>): Promise<T> {
    if (this.held.has(key)) throw new ApiError(409, 'Busy', `Another backup, restore or extraction of ${key} is running`);
    this.held.add(key);
    try {
      return await fn();
    } finally {
      this.held.delete(key);
    }
  }
}

const vals = (i: HandlerInput) => i.values;

export function browserHandlers(d: BrowserDeps): Record<string, Handler> {
  const target = (i: HandlerInput) => volumeOf(d.apps, vals(i).appname, vals(i).component);

  return {
    getfolderinfo: async (i) => {
      const parts = volumePath(vals(i).folder, 'folder', { allowRoot: true });
      const { root } = await target(i);
      return withDir(root.walk(parts), (dir) => listInfo(dir).then((l) => (parts.length ? l : l.filter((e) => e.name !== STAGING))));
    },
    createfolder: async (i) => {
      const parts = volumePath(vals(i).folder, 'folder');
      const { root } = await target(i);
      const { dir, name } = await root.parentOf(parts);
      return withDir(dir, async () => {
        await fs.promises.mkdir(dir.at(name), { mode: 0o755 }).catch((e) => {
          throw walkError(e, dir.display(name));
        });
        return { message: `Folder ${parts.join('/')} created` };
      });
    },
    renameobject: async (i) => {
      const parts = volumePath(vals(i).oldpath, 'oldpath');
      const newname = parseName(vals(i).newname, 'newname');
      if (parts.length === 1 && newname === STAGING) throw new PathRefused(`newname: ${STAGING} is the node's own folder`);
      const t = await target(i);
      keepMountRoots(t, parts, 'oldpath');
      keepMountRoots(t, [...parts.slice(0, -1), newname], 'newname');
      const { root } = t;
      const { dir, name } = await root.parentOf(parts);
      return withDir(dir, async () => {
        if (!(await dir.lstat(name))) throw new ApiError(404, 'NotFound', `${dir.display(name)} does not exist`);
        if (await dir.lstat(newname)) throw new ApiError(409, 'Exists', `${dir.display(newname)} already exists`);
        await fs.promises.rename(dir.at(name), dir.at(newname)).catch((e) => {
          throw walkError(e, dir.display(newname));
        });
        return { message: `Renamed ${parts.join('/')} to ${newname}` };
      });
    },
    removeobject: async (i) => {
      const parts = volumePath(vals(i).object, 'object');
      const t = await target(i);
      keepMountRoots(t, parts, 'object');
      const { root } = t;
      const { dir, name } = await root.parentOf(parts);
      return withDir(dir, async () => {
        await removeTree(dir, name);
        return { message: `Removed ${parts.join('/')}` };
      });
    },
    downloadfile: async (i) => {
      const parts = volumePath(vals(i).file, 'file');
      const { root } = await target(i);
      const { dir, name } = await root.parentOf(parts);
      return withDir(dir, () => sendFile(dir, name, i.headers.range));
    },
    downloadfolder: async (i) => {
      const parts = volumePath(vals(i).folder, 'folder', { allowRoot: true });
      const { root, component } = await target(i);
      let dir: Dir;
      let names: string[];
      let prefix = '';
      if (parts.length) {
        const p = await root.parentOf(parts);
        const st = await p.dir.lstat(p.name);
        if (!st?.isDirectory()) {
          await p.dir.close();
          throw st ? new PathRefused(`${parts.join('/')} is not a folder`) : new ApiError(404, 'NotFound', `${parts.join('/')} does not exist`);
        }
        dir = p.dir;
        names = [p.name];
      } else {
        dir = await root.walk([]);
        names = (await dir.list()).filter((n) => n !== STAGING);
        prefix = '';
      }
      const { stream } = packStream(dir, names, { prefix, signal: i.signal });
      const file = `${parts.length ? parts[parts.length - 1] : component.name}.tar.gz`;
      return reply(200, stream, { 'Content-Type': 'application/gzip', 'Content-Disposition': `attachment; filename="${file}"` });
    },

    // --- operations: run in the host's queue; a thrown ApiError is the Failed poll's problem ---
    moveobject: async (i) => {
      const [src, dst] = [volumePath(vals(i).source, 'source'), volumePath(vals(i).target, 'target')];
      const t = await target(i);
      keepMountRoots(t, src, 'source');
      keepMountRoots(t, dst, 'target');
      const { root } = t;
      const a = await root.parentOf(src);
      try {
        const b = await root.parentOf(dst);
        try {
          if (!(await a.dir.lstat(a.name))) throw new ApiError(404, 'NotFound', `${src.join('/')} does not exist`);
          if (await b.dir.lstat(b.name)) throw new ApiError(409, 'Exists', `${dst.join('/')} already exists`);
          i.checkpoint();
          await fs.promises.rename(a.dir.at(a.name), b.dir.at(b.name)).catch((e) => {
            throw walkError(e, dst.join('/'));
          });
          return { message: `Moved ${src.join('/')} to ${dst.join('/')}` };
        } finally {
          await b.dir.close();
        }
      } finally {
        await a.dir.close();
      }
    },
    copyobject: async (i) => {
      const [src, dst] = [volumePath(vals(i).source, 'source'), volumePath(vals(i).target, 'target')];
      if (dst.length > src.length && src.every((p, k) => dst[k] === p)) throw new PathRefused('target is inside source');
      const t = await target(i);
      keepMountRoots(t, dst, 'target');
      const { root } = t;
      const a = await root.parentOf(src);
      try {
        const b = await root.parentOf(dst);
        try {
          if (await b.dir.lstat(b.name)) throw new ApiError(409, 'Exists', `${dst.join('/')} already exists`);
          const stats = await copyTree(a.dir, a.name, b.dir, b.name, () => {
            i.checkpoint();
          });
          i.progress(stats);
          return { message: `Copied ${src.join('/')} to ${dst.join('/')}`, ...stats };
        } catch (e) {
          // A canceled or failed copy leaves nothing half-made behind.
          if (await b.dir.lstat(b.name).catch(() => null)) await removeTree(b.dir, b.name).catch(() => undefined);
          throw e;
        } finally {
          await b.dir.close();
        }
      } finally {
        await a.dir.close();
      }
    },
    compressobject: async (i) => {
      const folder = volumePath(vals(i).folder, 'folder', { allowRoot: true });
      const entries = (vals(i).entries as unknown[]).map((e, k) => parseName(e, `entries[${k}]`));
      const dst = volumePath(vals(i).target, 'target');
      if (!dst[dst.length - 1].endsWith('.tar.gz')) throw new PathRefused('target must end with .tar.gz');
      const t = await target(i);
      keepMountRoots(t, dst, 'target');
      const { root } = t;
      const dir = await root.walk(folder);
      try {
        for (const e of entries) if (!(await dir.lstat(e))) throw new ApiError(404, 'NotFound', `${dir.display(e)} does not exist`);
        const b = await root.parentOf(dst);
        try {
          if (await b.dir.lstat(b.name)) throw new ApiError(409, 'Exists', `${dst.join('/')} already exists`);
          try {
            const stats = await packToFile(dir, entries, b.dir, b.name, { checkpoint: () => i.checkpoint(), signal: i.signal });
            return { message: `Archived ${entries.length} entries into ${dst.join('/')}`, ...stats };
          } catch (e) {
            await fs.promises.unlink(b.dir.at(b.name)).catch(() => undefined);
            throw e;
          }
        } finally {
          await b.dir.close();
        }
      } finally {
        await dir.close();
      }
    },
    extractobject: async (i) => {
      const src = volumePath(vals(i).source, 'source');
      const dst = volumePath(vals(i).target, 'target', { allowRoot: true });
      const t = await target(i);
      return d.lock.with(`${t.app.name}/${t.component.name}`, async () => {
        const a = await t.root.parentOf(src);
        const { fh } = await a.dir.openRead(a.name).finally(() => a.dir.close());
        const stageName = `extract-${randomUUID()}`;
        let staging: Dir | null = null;
        try {
          staging = await t.root.walk([STAGING], { create: true });
          await fs.promises.mkdir(staging.at(stageName), { mode: 0o700 });
          const stage = await staging.sub(stageName);
          try {
            const stats = await extractUnprivileged(stage, fh, d.limits, { checkpoint: () => i.checkpoint(), signal: i.signal });
            i.progress({ extracted: stats });
            // Then move each top-level entry into the target, which must not hold any of them.
            const dest = await t.root.walk(dst, { create: true });
            try {
              const names = await stage.list();
              for (const n of names) {
                keepMountRoots(t, [...dst, n], 'target');
                if (await dest.lstat(n)) throw new ApiError(409, 'Exists', `${dest.display(n)} already exists; nothing was extracted`);
              }
              i.checkpoint();
              for (const n of names) await fs.promises.rename(stage.at(n), dest.at(n));
              return { message: `Extracted ${src.join('/')} into ${dst.join('/') || '/'}`, ...stats };
            } finally {
              await dest.close();
            }
          } finally {
            await stage.close();
          }
        } finally {
          await fh.close();
          if (staging) {
            await removeTree(staging, stageName).catch(() => undefined);
            await staging.close();
          }
        }
      });
    },
  };
}
