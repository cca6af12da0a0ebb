/**
 * Reaching a file or folder under a root the node owns without ever following a symbolic link, for every
 * process of the node that touches tenants' folders (the volumes plugin's file operations, the apps plugin's
 * check of a container's bind sources before Docker follows them).
 *
 * Node has no openat(2): `/proc/self/fd/<dirfd>/<name>` stands in for it (the kernel resolves the magic link
 * to the folder that descriptor holds, whatever was renamed or swapped since). Every component is opened
 * with O_NOFOLLOW relative to its parent's descriptor, so a link anywhere on the way fails the walk (ELOOP
 * or ENOTDIR) instead of being followed.
 */
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';

const C = fs.constants;
export const DIR_FLAGS = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW;
export const READ_FLAGS = C.O_RDONLY | C.O_NOFOLLOW;

/** The path naming `name` inside the folder open as `fd` (openat emulation); `name` is one plain component. */
export function fdPath(fd: number, name?: string): string {
  if (name === undefined) return `/proc/self/fd/${fd}`;
  if (name.includes('/') || name === '' || name === '.' || name === '..' || name.includes('\0')) throw new Error(`bad entry name ${JSON.stringify(name)}`);
  return `/proc/self/fd/${fd}/${name}`;
}

/** Why a no-follow walk stopped: `link` when a component is a symbolic link (or a file where a folder must be). */
export class WalkStopped extends Error {
  constructor(
    readonly reason: 'link' | 'missing' | 'outside' | 'other',
    /** The components walked so far, the offending one last. */
    readonly at: string[],
    message: string,
  ) {
    super(message);
  }
}

const stopped = (e: unknown, at: string[]): WalkStopped => {
  const code = (e as NodeJS.ErrnoException).code;
  const where = at.join('/') || '.';
  if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EMLINK') return new WalkStopped('link', at, `${where} is a symbolic link or not a folder`);
  if (code === 'ENOENT') return new WalkStopped('missing', at, `${where} does not exist`);
  return new WalkStopped('other', at, `${where}: ${code ?? (e as Error).message}`);
};

/**
 * Open `parts` under the folder `root` (itself opened O_NOFOLLOW: the root path is the node's own), every
 * folder on the way O_DIRECTORY|O_NOFOLLOW and the last component O_NOFOLLOW (a folder or a regular file;
 * O_NONBLOCK so a FIFO cannot hold the open). The real path of what was reached must be the root's or
 * below it. Answers the open handle (the caller closes it) and its lstat; throws WalkStopped.
 */
export async function openNoFollow(root: string, parts: string[]): Promise<{ fh: FileHandle; stat: fs.Stats; real: string; rootReal: string }> {
  let cur: FileHandle;
  try {
    cur = await fs.promises.open(root, DIR_FLAGS);
  } catch (e) {
    throw stopped(e, []);
  }
  try {
    const rootReal = await fs.promises.readlink(fdPath(cur.fd));
    for (const [k, p] of parts.entries()) {
      const last = k === parts.length - 1;
      let next: FileHandle;
      try {
        next = await fs.promises.open(fdPath(cur.fd, p), last ? READ_FLAGS | C.O_NONBLOCK : DIR_FLAGS);
      } catch (e) {
        throw stopped(e, parts.slice(0, k + 1));
      }
      await cur.close();
      cur = next;
    }
    const stat = await cur.stat();
    if (!stat.isDirectory() && !stat.isFile()) throw new WalkStopped('other', parts, `${parts.join('/')} is neither a folder nor a regular file`);
    const real = await fs.promises.readlink(fdPath(cur.fd));
    if (real !== rootReal && !real.startsWith(rootReal.endsWith('/') ? rootReal : `${rootReal}/`)) throw new WalkStopped('outside', parts, `${parts.join('/')} is outside ${root}`);
    return { fh: cur, stat, real, rootReal };
  } catch (e) {
    await cur.close().catch(() => undefined);
    throw e;
  }
}

/** mkdir of `name` in the folder `root`, through the root's descriptor (never through a link); an existing entry is left as it is. */
export async function mkdirAt(root: string, name: string, mode = 0o755): Promise<void> {
  const dir = await fs.promises.open(root, DIR_FLAGS);
  try {
    await fs.promises.mkdir(fdPath(dir.fd, name), { mode }).catch((e) => {
      if (e.code !== 'EEXIST') throw e;
    });
  } finally {
    await dir.close();
  }
}
