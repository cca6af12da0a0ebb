/**
 * The one safe way to touch a volume. Every route of this plugin reaches files only through this module.
 *
 * - Request paths are validated parts (`parseRelPath`): strings only, no leading `/`, no `//`, no NUL or
 *   backslash, no `.` or `..` component, each component from the allowed characters (facts 6.5).
 * - Nothing is ever opened by a full path a tenant could change under us. A folder is reached by walking
 *   from the volume root one component at a time, each opened with O_DIRECTORY|O_NOFOLLOW relative to the
 *   descriptor of its parent: Node has no openat(2), so `/proc/self/fd/<dirfd>/<name>` stands in for it (the
 *   kernel resolves the magic link to the opened folder itself, whatever was renamed or swapped since).
 *   A symbolic link anywhere on the way fails the walk (ELOOP/ENOTDIR), so a link planted inside the volume
 *   (to /etc, to another app's volume) is never followed, and a swap between check and use changes nothing.
 * - Leaves are opened with O_NOFOLLOW; rename, unlink, rmdir, mkdir, symlink, link and lstat never follow
 *   their last component. After a walk, the real path of the folder reached (`readlink /proc/self/fd/N`)
 *   must still be the root or below it: the check of the deepest existing ancestor, on the descriptor.
 * - No shell, no child process: everything is a system call on descriptors.
 */
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { ApiError } from '../../core/plugin-api.ts';
import { DIR_FLAGS, READ_FLAGS, fdPath } from '../../lib/no-follow/walk.ts';

const C = fs.constants;
export { DIR_FLAGS, READ_FLAGS };
export const CREATE_FLAGS = C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW;

/** Characters of one path component (facts 6.5). */
const COMPONENT = /^[a-zA-Z0-9_\-. @#+=()[\]{}]+$/;
export const MAX_COMPONENT = 255;
export const MAX_DEPTH = 64;

export class PathRefused extends ApiError {
  constructor(message: string) {
    super(400, 'PathRefused', message);
  }
}

/**
 * A relative path from a request, as its components. `''` (or absent, when `allowRoot`) is the root itself.
 * Everything else that is not plainly a relative path of allowed names is refused, never repaired.
 */
export function parseRelPath(value: unknown, what: string, opts: { allowRoot?: boolean } = {}): string[] {
  if (value === undefined || value === null || value === '') {
    if (opts.allowRoot) return [];
    throw new PathRefused(`${what} is required`);
  }
  if (typeof value !== 'string') throw new PathRefused(`${what} must be a string`);
  if (value.includes('\0')) throw new PathRefused(`${what} must not contain NUL`);
  if (value.includes('\\')) throw new PathRefused(`${what} must not contain a backslash`);
  if (value.startsWith('/')) throw new PathRefused(`${what} must be relative to the volume, not absolute`);
  const parts = value.split('/');
  if (parts.length > MAX_DEPTH) throw new PathRefused(`${what} is deeper than ${MAX_DEPTH} folders`);
  for (const p of parts) {
    if (p === '') throw new PathRefused(`${what} must not contain an empty component (//)`);
    if (p === '.' || p === '..') throw new PathRefused(`${what} must not contain . or .. components`);
    if (p.length > MAX_COMPONENT) throw new PathRefused(`${what} has a component longer than ${MAX_COMPONENT} characters`);
    if (!COMPONENT.test(p)) throw new PathRefused(`${what} has a component with a character outside [a-zA-Z0-9_-. @#+=()[]{}]`);
  }
  return parts;
}

/** A single name (no `/`), e.g. the new name of a rename. */
export function parseName(value: unknown, what: string): string {
  const parts = parseRelPath(value, what);
  if (parts.length !== 1) throw new PathRefused(`${what} must be a name, not a path`);
  return parts[0];
}

/** An open folder: children are reached only through its descriptor. */
export class Dir {
  private closed = false;
  constructor(
    readonly fh: FileHandle,
    /** Components from the root, for messages and for archive entry names. */
    readonly rel: string[],
    readonly root: Root,
  ) {}

  /** The path that names `name` inside this very folder (openat emulation). `name` never holds a `/`. */
  at(name: string): string {
    if (name.includes('/') || name === '' || name === '.' || name === '..' || name.includes('\0')) throw new PathRefused(`bad entry name`);
    return fdPath(this.fh.fd, name);
  }

  /** The folder itself as a path (for readdir). */
  self(): string {
    return fdPath(this.fh.fd);
  }

  display(name?: string): string {
    return [...this.rel, ...(name === undefined ? [] : [name])].join('/') || '/';
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.fh.close().catch(() => undefined);
  }

  /** A child folder (never a link), optionally made when missing. */
  async sub(name: string, opts: { create?: boolean; mode?: number } = {}): Promise<Dir> {
    try {
      return new Dir(await fs.promises.open(this.at(name), DIR_FLAGS), [...this.rel, name], this.root);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && opts.create) {
        await fs.promises.mkdir(this.at(name), { mode: opts.mode ?? 0o755 }).catch((err) => {
          if (err.code !== 'EEXIST') throw err;
        });
        return this.sub(name);
      }
      throw walkError(e, this.display(name));
    }
  }

  async lstat(name: string): Promise<fs.Stats | null> {
    try {
      return await fs.promises.lstat(this.at(name));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
  }

  async list(): Promise<string[]> {
    return fs.promises.readdir(this.self());
  }

  /** Open a regular file for reading; a link or anything else is refused. */
  async openRead(name: string): Promise<{ fh: FileHandle; stat: fs.Stats }> {
    let fh: FileHandle;
    try {
      fh = await fs.promises.open(this.at(name), READ_FLAGS | C.O_NONBLOCK);
    } catch (e) {
      throw walkError(e, this.display(name));
    }
    const stat = await fh.stat();
    if (!stat.isFile()) {
      await fh.close();
      throw new PathRefused(`${this.display(name)} is not a file`);
    }
    return { fh, stat };
  }

  /** Create a new file (never over an existing entry, never through a link). */
  async create(name: string, mode = 0o644): Promise<FileHandle> {
    try {
      return await fs.promises.open(this.at(name), CREATE_FLAGS, mode);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw new ApiError(409, 'Exists', `${this.display(name)} already exists`);
      throw walkError(e, this.display(name));
    }
  }
}

/** Why a walk stopped, as an answer the caller can act on. */
export function walkError(e: unknown, where: string): Error {
  if (e instanceof ApiError) return e;
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'EMLINK') return new PathRefused(`${where} is a symbolic link or not a folder; links are never followed`);
  if (code === 'ENOENT') return new ApiError(404, 'NotFound', `${where} does not exist`);
  if (code === 'EEXIST' || code === 'ENOTEMPTY') return new ApiError(409, 'Exists', `${where} already exists`);
  if (code === 'ENOSPC' || code === 'EDQUOT') return new ApiError(507, 'NoSpace', `The volume is full`);
  if (code === 'EINVAL') return new PathRefused(`${where}: a folder cannot be moved into itself`);
  if (code === 'EXDEV') return new PathRefused(`${where} is on another volume`);
  return e as Error;
}

/** A volume root the node itself owns (a component's mountpoint, the share folder); opened once per use. */
export class Root {
  constructor(
    /** The node's own path of the root (never from a request). */
    readonly dir: string,
    /** The root is a descriptor handed to this process (`/proc/self/fd/3`, a magic link): open it as it is. */
    readonly inherited = false,
  ) {}

  async open(): Promise<Dir> {
    let fh: FileHandle;
    try {
      fh = await fs.promises.open(this.dir, this.inherited ? C.O_RDONLY | C.O_DIRECTORY : DIR_FLAGS);
    } catch (e) {
      throw new ApiError(503, 'VolumeUnavailable', `The volume is not available: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    return new Dir(fh, [], this);
  }

  /**
   * Walk to the folder `parts` (each component opened without following links), then check that the real
   * path of what was reached is still inside the root. The caller closes the answer.
   */
  async walk(parts: string[], opts: { create?: boolean } = {}): Promise<Dir> {
    let cur = await this.open();
    const rootReal = await fs.promises.readlink(cur.self());
    try {
      for (const p of parts) {
        const next = await cur.sub(p, opts);
        await cur.close();
        cur = next;
      }
      const real = await fs.promises.readlink(cur.self());
      if (real !== rootReal && !real.startsWith(rootReal.endsWith('/') ? rootReal : `${rootReal}/`)) throw new PathRefused(`${cur.display()} is outside the volume`);
      return cur;
    } catch (e) {
      await cur.close();
      throw e;
    }
  }

  /** The parent folder of `parts` and the last name: what leaf operations take. */
  async parentOf(parts: string[], opts: { create?: boolean } = {}): Promise<{ dir: Dir; name: string }> {
    if (!parts.length) throw new PathRefused('the volume root itself cannot be used here');
    const dir = await this.walk(parts.slice(0, -1), opts);
    return { dir, name: parts[parts.length - 1] };
  }
}

/** Run `fn` with an open folder, always closing it. */
export async function withDir<T>(dir: Dir | Promise<Dir>, fn: (d: Dir) => Promise<T>): Promise<T> {
  const d = await dir;
  try {
    return await fn(d);
  } finally {
    await d.close();
  }
}

export const joinRel = (...parts: string[]) => path.posix.join(...parts);

/**
 * A stream of a file read through its handle. Never hand a numeric descriptor to fs streams here: a stream
 * destroyed by a failed pipeline closes "its" descriptor even with autoClose false, and that number may by
 * then belong to another file (measured: EBADF on the handle's own close).
 */
export function readerOf(fh: FileHandle, chunk = 256 * 1024): Readable {
  return Readable.from(
    (async function* () {
      let pos = 0;
      for (;;) {
        const buf = Buffer.allocUnsafe(chunk);
        const { bytesRead } = await fh.read(buf, 0, chunk, pos);
        if (!bytesRead) return;
        pos += bytesRead;
        yield buf.subarray(0, bytesRead);
      }
    })(),
    { objectMode: false },
  );
}

/** A writable stream into a file handle (which stays the caller's to close). */
export function writerOf(fh: FileHandle): Writable {
  return new Writable({
    highWaterMark: 256 * 1024,
    write(chunk: Buffer, _enc, cb) {
      fh.write(chunk).then(() => cb(), cb);
    },
  });
}
