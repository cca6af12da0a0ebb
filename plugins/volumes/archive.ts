/**
 * gzip tar archives of volume folders, read and written through descriptors only (safe-path.ts).
 *
 * The tar format itself is tar-stream's (a small, long-kept parser and writer, already in the tree under
 * dockerode); this module decides what is read and what is written. Why not node-tar's pack/unpack or GNU
 * tar: both walk the tree by path names (lstat, then open by name), so a tenant's container that swaps a
 * file for a link between the two steps would make a root process read or write outside the volume. Here
 * every file is opened O_NOFOLLOW from its parent folder's descriptor.
 *
 * Extraction refuses the whole archive (nothing of it is kept by the callers: they extract into staging) on
 * any entry that is absolute or has a `..` component, a symbolic link whose target is absolute or that,
 * once every entry is in place, resolves outside the target folder (linksStayInside), a hard link to anything but a regular file already extracted inside it, a device, FIFO or
 * unknown type, more than `maxEntries` entries, or more than `maxBytes` of file data (archive bombs).
 */
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import type tarStream from 'tar-stream';
import { createRequire } from 'node:module';
import { ApiError } from '../../core/plugin-api.ts';
import { Dir, walkError, writerOf } from './safe-path.ts';
import type { Checkpoint } from './tree.ts';

const CHUNK = 256 * 1024;
// Loaded with the first archive (a folder download, a compress, a backup), not at start: about 40 ms of CPU
// at every start for routes most nodes rarely serve (measured).
const require = createRequire(import.meta.url);
const tar = () => require('tar-stream') as typeof tarStream;

export class ArchiveRefused extends ApiError {
  constructor(message: string) {
    super(422, 'ArchiveRefused', message);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Writing

export interface PackStats {
  entries: number;
  bytes: number;
  skipped: number;
}

/**
 * A gzip tar stream of `names` inside `dir` (entry names `prefix` + name + ...). The folder stays open
 * until the stream ends (the caller passes ownership of `dir`).
 */
export function packStream(dir: Dir, names: string[], opts: { prefix?: string; checkpoint?: Checkpoint; level?: number; signal?: AbortSignal } = {}): { stream: Readable; done: Promise<PackStats> } {
  const pack = tar().pack();
  const gzip = zlib.createGzip({ level: opts.level ?? 6 });
  const stats: PackStats = { entries: 0, bytes: 0, skipped: 0 };
  const checkpoint = opts.checkpoint ?? (() => {});
  const produce = async () => {
    try {
      for (const name of names) await packEntry(pack, dir, name, opts.prefix ?? '', stats, checkpoint, opts.signal);
      pack.finalize();
    } finally {
      await dir.close();
    }
  };
  const done = produce().then(
    () => stats,
    (e) => {
      pack.destroy(e);
      throw e;
    },
  );
  done.catch(() => undefined);
  const out = new PassThrough();
  pipeline(pack as unknown as Readable, gzip, out).catch((e) => out.destroy(e));
  return { stream: out, done };
}

function addEntry(pack: any, header: Record<string, unknown>, body?: Buffer): Promise<any> {
  return new Promise((resolve, reject) => {
    const s = pack.entry(header, body ?? null, (err: Error | null) => (err ? reject(err) : resolve(undefined)));
    if (!body && header.type === 'file') resolve(s);
  });
}

async function packEntry(pack: any, dir: Dir, name: string, prefix: string, stats: PackStats, checkpoint: Checkpoint, signal?: AbortSignal): Promise<void> {
  checkpoint();
  if (signal?.aborted) throw signal.reason ?? new Error('aborted');
  const st = await dir.lstat(name);
  if (!st) return;
  const entryName = prefix + name;
  const base = { name: entryName, mode: st.mode & 0o7777, mtime: st.mtime, uid: st.uid, gid: st.gid };
  if (st.isDirectory()) {
    const sub = await dir.sub(name).catch(() => null);
    if (!sub) return; // swapped for something else since the lstat: left out
    try {
      await addEntry(pack, { ...base, type: 'directory', size: 0 }, Buffer.alloc(0));
      stats.entries++;
      for (const child of (await sub.list()).sort()) await packEntry(pack, sub, child, `${entryName}/`, stats, checkpoint, signal);
    } finally {
      await sub.close();
    }
  } else if (st.isFile()) {
    let opened: { fh: FileHandle; stat: fs.Stats };
    try {
      opened = await dir.openRead(name);
    } catch {
      stats.skipped++; // replaced by a link or removed since the lstat
      return;
    }
    const { fh, stat } = opened;
    try {
      const size = stat.size;
      const entry: Writable = await new Promise((resolve, reject) => {
        const s = pack.entry({ ...base, type: 'file', size, mode: stat.mode & 0o7777 }, (err: Error | null) => {
          if (err) reject(err);
        });
        resolve(s);
      });
      const finished = new Promise<void>((resolve, reject) => {
        entry.on('finish', resolve);
        entry.on('error', reject);
      });
      let pos = 0;
      while (pos < size) {
        const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - pos));
        const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
        // A file that shrank while it was read is padded to the size its header announced.
        const chunk = bytesRead ? buf.subarray(0, bytesRead) : Buffer.alloc(buf.length);
        pos += chunk.length;
        if (!entry.write(chunk)) await new Promise((r) => entry.once('drain', r));
      }
      entry.end();
      await finished;
      stats.entries++;
      stats.bytes += size;
    } finally {
      await fh.close();
    }
  } else if (st.isSymbolicLink()) {
    const linkname = await fs.promises.readlink(dir.at(name)).catch(() => null);
    if (linkname === null) return;
    await addEntry(pack, { ...base, type: 'symlink', linkname, size: 0 }, Buffer.alloc(0));
    stats.entries++;
  } else stats.skipped++;
}

/** Write a gzip tar of `names` in `dir` into a new file `outName` in `outDir`; the folders stay the caller's. */
export async function packToFile(dir: Dir, names: string[], outDir: Dir, outName: string, opts: { prefix?: string; checkpoint?: Checkpoint; signal?: AbortSignal } = {}): Promise<PackStats> {
  // packStream closes the folder it is given: hand it its own descriptor of the same folder.
  const own = await dir.root.walk(dir.rel);
  const { stream, done } = packStream(own, names, opts);
  const out = await outDir.create(outName, 0o600);
  try {
    await pipeline(stream, writerOf(out));
    await out.sync();
  } finally {
    await out.close();
  }
  return done;
}

// ---------------------------------------------------------------------------------------------------------
// Reading

export interface ExtractLimits {
  maxBytes: number;
  maxEntries: number;
}

export interface ExtractStats {
  entries: number;
  bytes: number;
}

/** The components of an archive entry name, or a refusal. `./` and empty components are dropped. */
export function entryParts(name: string): string[] {
  if (typeof name !== 'string' || name.includes('\0')) throw new ArchiveRefused('an entry name holds NUL');
  if (name.startsWith('/')) throw new ArchiveRefused(`entry ${JSON.stringify(name.slice(0, 200))} is absolute`);
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (parts.some((p) => p === '..')) throw new ArchiveRefused(`entry ${JSON.stringify(name.slice(0, 200))} leaves the target (..)`);
  if (parts.length > 64) throw new ArchiveRefused(`entry ${JSON.stringify(name.slice(0, 200))} is deeper than 64 folders`);
  if (parts.some((p) => Buffer.byteLength(p) > 255)) throw new ArchiveRefused('an entry has a component longer than 255 bytes');
  return parts;
}

/**
 * A link entry on its own: refused at once when its target is empty, absolute, or leaves the target by its
 * names alone. Passing here is not enough: see linksStayInside.
 */
function checkSymlink(parts: string[], linkname: string): void {
  if (!linkname || linkname.includes('\0')) throw new ArchiveRefused(`link ${parts.join('/')} has an empty target`);
  if (linkname.startsWith('/')) throw new ArchiveRefused(`link ${parts.join('/')} points to an absolute path (${linkname.slice(0, 200)})`);
  const resolved = path.posix.normalize(path.posix.join(parts.slice(0, -1).join('/') || '.', linkname));
  if (resolved === '..' || resolved.startsWith('../')) throw new ArchiveRefused(`link ${parts.join('/')} points outside the target (${linkname.slice(0, 200)})`);
}

/**
 * Extract a gzip tar stream into `target` (a fresh staging folder). Owners are kept only when this
 * process is root and `owners` is set; set-user/group-id bits are always dropped.
 */
export async function extractInto(
  target: Dir,
  input: Readable,
  limits: ExtractLimits,
  opts: { checkpoint?: Checkpoint; owners?: boolean; onOwner?: (parts: string[], uid: number, gid: number) => void } = {},
): Promise<ExtractStats> {
  const checkpoint = opts.checkpoint ?? (() => {});
  const chown = !!opts.owners && process.getuid?.() === 0;
  const record = (parts: string[], h: any) => opts.onOwner?.(parts, Number(h.uid) || 0, Number(h.gid) || 0);
  const stats: ExtractStats = { entries: 0, bytes: 0 };
  const dirs: { parts: string[]; mode: number; mtime?: Date; uid: number; gid: number }[] = [];
  const links: string[][] = [];
  // The folder of the previous entry stays open: archives list a folder's files together.
  let cache: { key: string; dir: Dir } | null = null;
  const parentOf = async (parts: string[], create: boolean): Promise<Dir> => {
    const key = parts.slice(0, -1).join('/');
    if (cache?.key === key) return cache.dir;
    const dir = await target.root.walk([...target.rel, ...parts.slice(0, -1)], { create }).catch((e) => {
      throw e instanceof ApiError && e.name === 'PathRefused' ? new ArchiveRefused(`entry ${parts.join('/')} would pass through a link`) : e;
    });
    if (cache) await cache.dir.close();
    cache = { key, dir };
    return dir;
  };

  const extract = tar().extract();
  extract.on('entry', (header: any, stream: Readable, next: (err?: Error) => void) => {
    handle(header, stream).then(
      () => next(),
      (e) => {
        stream.resume();
        extract.destroy(e);
      },
    );
  });

  const handle = async (h: any, stream: Readable) => {
    checkpoint();
    if (++stats.entries > limits.maxEntries) throw new ArchiveRefused(`the archive has more than ${limits.maxEntries} entries`);
    const parts = entryParts(h.name);
    if (!parts.length) return void stream.resume(); // the archive's own root (./)
    const name = parts[parts.length - 1];
    const mode = (h.mode ?? 0o644) & 0o1777;
    switch (h.type) {
      case 'directory': {
        const parent = await parentOf(parts, true);
        const st = await parent.lstat(name);
        if (st && !st.isDirectory()) throw new ArchiveRefused(`entry ${parts.join('/')} replaces a file or link with a folder`);
        if (!st) await fs.promises.mkdir(parent.at(name), { mode: 0o700 });
        dirs.push({ parts, mode, mtime: h.mtime, uid: h.uid, gid: h.gid });
        record(parts, h);
        stream.resume();
        return;
      }
      case 'file':
      case 'contiguous-file': {
        const size = Number(h.size ?? 0);
        if (stats.bytes + size > limits.maxBytes) throw new ArchiveRefused(`the archive unpacks to more than ${limits.maxBytes} bytes`);
        const parent = await parentOf(parts, true);
        await replaceable(parent, name, parts);
        const fh = await parent.create(name, 0o600);
        try {
          let written = 0;
          for await (const chunk of stream) {
            written += chunk.length;
            if (written > size) throw new ArchiveRefused('an entry is longer than its header says');
            await fh.write(chunk);
          }
          stats.bytes += written;
          if (chown) await fh.chown(h.uid ?? 0, h.gid ?? 0);
          await fh.chmod(mode);
          if (h.mtime) await fh.utimes(h.mtime, h.mtime);
        } finally {
          await fh.close();
        }
        record(parts, h);
        return;
      }
      case 'symlink': {
        checkSymlink(parts, h.linkname);
        const parent = await parentOf(parts, true);
        await replaceable(parent, name, parts);
        await fs.promises.symlink(h.linkname, parent.at(name));
        links.push(parts);
        if (chown) await fs.promises.lchown(parent.at(name), h.uid ?? 0, h.gid ?? 0).catch(() => undefined);
        record(parts, h);
        stream.resume();
        return;
      }
      case 'link': {
        const from = entryParts(h.linkname ?? '');
        if (!from.length) throw new ArchiveRefused(`hard link ${parts.join('/')} has no target`);
        // Through descriptors: the target must be a regular file already extracted inside the target.
        const src = await target.root.walk([...target.rel, ...from.slice(0, -1)]).catch(() => {
          throw new ArchiveRefused(`hard link ${parts.join('/')} points outside the extracted files (${String(h.linkname).slice(0, 200)})`);
        });
        try {
          const st = await src.lstat(from[from.length - 1]);
          if (!st?.isFile()) throw new ArchiveRefused(`hard link ${parts.join('/')} must name a file extracted before it`);
          const parent = await parentOf(parts, true);
          await replaceable(parent, name, parts);
          await fs.promises.link(src.at(from[from.length - 1]), parent.at(name));
        } finally {
          await src.close();
        }
        stream.resume();
        return;
      }
      default:
        throw new ArchiveRefused(`entry ${parts.join('/')} is a ${h.type}; only files, folders and links are extracted`);
    }
  };

  try {
    await pipeline(input, zlib.createGunzip(), extract as unknown as Writable);
  } catch (e) {
    if (e instanceof ApiError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR' || /gzip|header|tar|Unexpected end|incorrect/i.test(String((e as Error).message)))
      throw new ArchiveRefused(`not a gzip tar archive (${(e as Error).message})`);
    throw walkError(e, 'archive');
  } finally {
    if (cache) await (cache as { dir: Dir }).dir.close();
  }
  await linksStayInside(target, links);
  // Folder modes last: a read-only folder would have refused its own files.
  for (const d of dirs.reverse()) {
    const dir = await target.root.walk([...target.rel, ...d.parts]).catch(() => null);
    if (!dir) continue;
    try {
      if (chown) await dir.fh.chown(d.uid ?? 0, d.gid ?? 0);
      await dir.fh.chmod(d.mode);
      if (d.mtime) await dir.fh.utimes(d.mtime, d.mtime);
    } finally {
      await dir.close();
    }
  }
  return stats;
}

/** Links followed while resolving one link before it counts as a loop (the kernel's limit, 40). */
const MAX_HOPS = 40;

/**
 * Every link of the archive, judged once every entry is in place, by where it resolves on disk: each of its
 * target's components is looked up in the extracted tree (by descriptor, never followed by the kernel), a
 * link met on the way is resolved in turn, and a `..` that would climb above the target refuses the whole
 * archive. Judging each link on its own names is not enough: `s1 -> s0/..` looks inside, but with
 * `s0 -> .` (also inside) it is the target's parent, and a chain `sN -> s(N-1)/..` reaches `/`. Judging at
 * the end rather than at each entry: a later entry may replace a link or make a missing name exist, which
 * changes where an earlier link resolves. A name that does not exist is judged by its name (`..` climbs).
 */
async function linksStayInside(target: Dir, links: string[][]): Promise<void> {
  for (const parts of links) {
    const where = await resolveLink(target, parts);
    if (where) throw new ArchiveRefused(`link ${parts.join('/')} ${where}; links must resolve inside the target`);
  }
}

/** Why the link at `parts` (relative to the target) resolves outside it, or null when it stays inside. */
async function resolveLink(target: Dir, parts: string[]): Promise<string | null> {
  const cur = parts.slice(0, -1); // a folder of the extracted tree, reached without links
  let pending: string[] = [parts[parts.length - 1]];
  let first = true;
  let hops = 0;
  let missing = false;
  while (pending.length) {
    const c = pending.shift()!;
    if (c === '' || c === '.') continue;
    if (c === '..') {
      if (!cur.length) return 'resolves above the target (through ..)';
      cur.pop();
      continue;
    }
    if (missing) {
      cur.push(c);
      continue;
    }
    const dir = await target.root.walk([...target.rel, ...cur]).catch(() => null);
    if (!dir) return `could not be followed (${cur.join('/')})`;
    try {
      const st = await dir.lstat(c);
      if (!st) {
        missing = true;
        cur.push(c);
      } else if (st.isSymbolicLink()) {
        if (!first && ++hops > MAX_HOPS) return 'is a loop of links';
        const to = await fs.promises.readlink(dir.at(c));
        if (to.startsWith('/')) return `goes through a link to an absolute path (${to.slice(0, 200)})`;
        pending = [...to.split('/'), ...pending];
      } else if (st.isDirectory()) {
        cur.push(c);
      } else if (pending.some((p) => p !== '' && p !== '.')) {
        return null; // a file with more to walk: the kernel stops here (ENOTDIR), it resolves nowhere
      } else cur.push(c);
    } finally {
      await dir.close();
    }
    first = false;
  }
  return null;
}

/** A later entry of the same name replaces a file or link; never a folder. */
async function replaceable(parent: Dir, name: string, parts: string[]): Promise<void> {
  const st = await parent.lstat(name);
  if (!st) return;
  if (st.isDirectory()) throw new ArchiveRefused(`entry ${parts.join('/')} replaces a folder`);
  await fs.promises.unlink(parent.at(name));
}
