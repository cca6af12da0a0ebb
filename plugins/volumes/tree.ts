/**
 * Recursive work on volume folders (size, listing, copy, removal), always through open descriptors
 * (safe-path.ts): a child folder is opened O_NOFOLLOW from its parent's descriptor, so a link or a swapped
 * folder inside the tree is never followed, and every copy reads the descriptor it checked.
 */
import fs from 'node:fs';
import { ApiError } from '../../core/plugin-api.ts';
import { Dir, walkError } from './safe-path.ts';

export type Checkpoint = () => void;
const NOOP: Checkpoint = () => {};

export interface EntryInfo {
  name: string;
  size: number;
  isDirectory: boolean;
  isFile: boolean;
  isSymbolicLink: boolean;
  createdAt: number;
  modifiedAt: number;
}

/** Bytes under a folder (files' sizes, recursively; links count their own size, never their target). */
export async function sizeOf(dir: Dir, checkpoint: Checkpoint = NOOP): Promise<number> {
  let total = 0;
  for (const name of await dir.list().catch(() => [] as string[])) {
    checkpoint();
    const st = await dir.lstat(name).catch(() => null);
    if (!st) continue;
    if (st.isDirectory()) {
      const sub = await dir.sub(name).catch(() => null);
      if (!sub) continue;
      try {
        total += await sizeOf(sub, checkpoint);
      } finally {
        await sub.close();
      }
    } else total += st.size;
  }
  return total;
}

export async function info(dir: Dir, name: string, st: fs.Stats): Promise<EntryInfo> {
  let size = st.size;
  if (st.isDirectory()) {
    const sub = await dir.sub(name).catch(() => null);
    if (sub) {
      try {
        size = await sizeOf(sub);
      } finally {
        await sub.close();
      }
    }
  }
  return {
    name,
    size,
    isDirectory: st.isDirectory(),
    isFile: st.isFile(),
    isSymbolicLink: st.isSymbolicLink(),
    createdAt: Math.round(st.birthtimeMs || st.ctimeMs),
    modifiedAt: Math.round(st.mtimeMs),
  };
}

/** The entries of a folder with their details, sorted by name. */
export async function listInfo(dir: Dir): Promise<EntryInfo[]> {
  const out: EntryInfo[] = [];
  for (const name of (await dir.list()).sort()) {
    const st = await dir.lstat(name);
    if (st) out.push(await info(dir, name, st));
  }
  return out;
}

/** Remove `name` in `dir` and everything under it; links are removed as links. */
export async function removeTree(dir: Dir, name: string, checkpoint: Checkpoint = NOOP): Promise<void> {
  const st = await dir.lstat(name);
  if (!st) throw new ApiError(404, 'NotFound', `${dir.display(name)} does not exist`);
  if (!st.isDirectory()) {
    await fs.promises.unlink(dir.at(name));
    return;
  }
  const sub = await dir.sub(name);
  try {
    for (const child of await sub.list()) {
      checkpoint();
      await removeTree(sub, child, checkpoint);
    }
  } finally {
    await sub.close();
  }
  await fs.promises.rmdir(dir.at(name)).catch((e) => {
    throw walkError(e, dir.display(name));
  });
}

/** Remove the entries of a folder, keeping the folder. */
export async function emptyDir(dir: Dir, checkpoint: Checkpoint = NOOP): Promise<void> {
  for (const child of await dir.list()) await removeTree(dir, child, checkpoint);
}

export interface CopyStats {
  files: number;
  bytes: number;
  skipped: number;
}

/**
 * Copy `srcName` in `src` to `dstName` in `dst` (which must not exist), keeping modes, owners and times
 * (as `cp -a` does). Regular files are copied between the descriptors that were checked
 * (copy_file_range/reflink through libuv on the /proc/self/fd paths); links are copied as links (their
 * text, never followed); devices, FIFOs and sockets are skipped and counted.
 */
export async function copyTree(src: Dir, srcName: string, dst: Dir, dstName: string, checkpoint: Checkpoint = NOOP, stats: CopyStats = { files: 0, bytes: 0, skipped: 0 }): Promise<CopyStats> {
  checkpoint();
  const st = await src.lstat(srcName);
  if (!st) throw new ApiError(404, 'NotFound', `${src.display(srcName)} does not exist`);
  const root = process.getuid?.() === 0;
  if (st.isDirectory()) {
    await fs.promises.mkdir(dst.at(dstName), { mode: 0o700 }).catch((e) => {
      throw walkError(e, dst.display(dstName));
    });
    const [s, d] = [await src.sub(srcName), await dst.sub(dstName)];
    try {
      for (const child of await s.list()) await copyTree(s, child, d, child, checkpoint, stats);
      if (root) await d.fh.chown(st.uid, st.gid);
      await d.fh.chmod(st.mode & 0o7777);
      await d.fh.utimes(st.atime, st.mtime);
    } finally {
      await Promise.all([s.close(), d.close()]);
    }
  } else if (st.isFile()) {
    const { fh: inp, stat } = await src.openRead(srcName);
    try {
      const out = await dst.create(dstName, 0o600);
      try {
        await fs.promises.copyFile(`/proc/self/fd/${inp.fd}`, `/proc/self/fd/${out.fd}`);
        if (root) await out.chown(stat.uid, stat.gid);
        await out.chmod(stat.mode & 0o7777);
        await out.utimes(stat.atime, stat.mtime);
      } finally {
        await out.close();
      }
      stats.files++;
      stats.bytes += stat.size;
    } finally {
      await inp.close();
    }
  } else if (st.isSymbolicLink()) {
    const target = await fs.promises.readlink(src.at(srcName));
    await fs.promises.symlink(target, dst.at(dstName)).catch((e) => {
      throw walkError(e, dst.display(dstName));
    });
    if (root) await fs.promises.lchown(dst.at(dstName), st.uid, st.gid).catch(() => undefined);
    stats.files++;
  } else stats.skipped++;
  return stats;
}
