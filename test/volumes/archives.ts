/**
 * Hostile and ordinary gzip tar archives for the volumes tests, written entry by entry with tar-stream (so
 * any header can be forged: `..` names, absolute names, links out, devices, bombs).
 */
import zlib from 'node:zlib';
import tar from 'tar-stream';

export interface Entry {
  name: string;
  type?: 'file' | 'directory' | 'symlink' | 'link' | 'character-device' | 'block-device' | 'fifo';
  body?: string | Buffer;
  linkname?: string;
  size?: number;
  mode?: number;
}

/** A gzip tar of `entries` (a file's `size` without a body streams that many zero bytes). */
export async function tgz(entries: Entry[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const gz = zlib.createGzip({ level: 9 });
  pack.pipe(gz);
  gz.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise((r) => gz.on('end', r));
  for (const e of entries) {
    const type = e.type ?? 'file';
    if (type === 'file' && e.body === undefined && e.size) {
      await new Promise<void>((resolve, reject) => {
        const s = pack.entry({ name: e.name, size: e.size, mode: e.mode ?? 0o644, type }, (err: Error | null) => (err ? reject(err) : resolve()));
        const zero = Buffer.alloc(1 << 20);
        let left = e.size!;
        const pump = () => {
          while (left > 0) {
            const n = Math.min(left, zero.length);
            left -= n;
            if (!s.write(zero.subarray(0, n))) return void s.once('drain', pump);
          }
          s.end();
        };
        pump();
      });
    } else {
      await new Promise<void>((resolve, reject) =>
        pack.entry({ name: e.name, type, linkname: e.linkname, mode: e.mode ?? (type === 'directory' ? 0o755 : 0o644), devmajor: 1, devminor: 3 }, e.body ?? '', (err: Error | null) => (err ? reject(err) : resolve())),
      );
    }
  }
  pack.finalize();
  await ended;
  return Buffer.concat(chunks);
}

/** Every archive extraction must refuse, with what it tries. */
export async function hostileArchives(marker: string): Promise<{ why: string; data: Buffer }[]> {
  return [
    { why: 'tar-slip ../', data: await tgz([{ name: 'ok.txt', body: 'x' }, { name: `../${marker}-slip`, body: 'pwned' }]) },
    { why: 'tar-slip deep ../../..', data: await tgz([{ name: `a/../../../../../../tmp/${marker}-deep`, body: 'pwned' }]) },
    { why: 'absolute name', data: await tgz([{ name: `/tmp/${marker}-abs`, body: 'pwned' }]) },
    { why: 'symlink to /etc, then a file through it', data: await tgz([{ name: 'l', type: 'symlink', linkname: '/etc' }, { name: `l/${marker}-through`, body: 'pwned' }]) },
    { why: 'relative symlink out, then a file through it', data: await tgz([{ name: 'd/l', type: 'symlink', linkname: '../../../../../../tmp' }, { name: `d/l/${marker}-rel`, body: 'pwned' }]) },
    { why: 'symlink inside, then a file through it (allowed link, refused walk)', data: await tgz([{ name: 'sub/', type: 'directory' }, { name: 'in', type: 'symlink', linkname: 'sub' }, { name: `in/${marker}-in`, body: 'x' }]) },
    {
      why: 'a chain of links each inside on its own (s0 -> ., sK -> s(K-1)/..) resolving to /',
      data: await tgz([{ name: 's0', type: 'symlink', linkname: '.' }, ...Array.from({ length: 16 }, (_, k) => ({ name: `s${k + 1}`, type: 'symlink' as const, linkname: `s${k}/..` }))]),
    },
    { why: 'a link through a name an entry makes later (a -> b/.., then b -> .)', data: await tgz([{ name: 'a', type: 'symlink', linkname: 'b/..' }, { name: 'b', type: 'symlink', linkname: '.' }]) },
    { why: 'hard link to /etc/passwd', data: await tgz([{ name: 'h', type: 'link', linkname: '/etc/passwd' }]) },
    { why: 'hard link with ..', data: await tgz([{ name: 'h', type: 'link', linkname: '../../../../etc/passwd' }]) },
    { why: 'hard link to a file not extracted', data: await tgz([{ name: 'h', type: 'link', linkname: 'nothere' }]) },
    { why: 'character device', data: await tgz([{ name: 'null', type: 'character-device' }]) },
    { why: 'block device', data: await tgz([{ name: 'sda', type: 'block-device' }]) },
    { why: 'fifo', data: await tgz([{ name: 'pipe', type: 'fifo' }]) },
    { why: 'size bomb (64 MB of zeros over the bound)', data: await tgz([{ name: 'zeros', size: 64 << 20 }]) },
    { why: 'entry-count bomb', data: await tgz(Array.from({ length: 300 }, (_, k) => ({ name: `f${k}`, body: '' }))) },
    { why: 'not gzip', data: Buffer.from('this is not an archive at all') },
    { why: 'gzip of garbage', data: zlib.gzipSync(Buffer.alloc(4096, 0x41)) },
  ];
}

/** The limits the tests configure, under which the bombs above are refused. */
export const TEST_LIMITS = { maxExtractBytes: 32 << 20, maxExtractEntries: 200 };
