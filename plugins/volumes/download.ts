/**
 * A file answered as a stream from the descriptor that was checked (opened O_NOFOLLOW from its folder's
 * descriptor), with HTTP Range: one `bytes=a-b`, `a-` or `-n` range answers 206; an unsatisfiable one 416
 * with `Content-Range: bytes * /size`; several ranges, or a malformed header, answer the whole file (RFC 9110
 * lets a server ignore Range).
 */
import fs from 'node:fs';
import { reply, type Reply } from '../../core/plugin-api.ts';
import type { Dir } from './safe-path.ts';

export function parseRange(header: string | string[] | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  if (typeof header !== 'string') return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const n = Number(m[2]);
    if (n === 0) return 'unsatisfiable';
    start = Math.max(0, size - n);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
    if (m[2] !== '' && Number(m[2]) < start) return null;
  }
  if (!Number.isSafeInteger(start) || start >= size) return 'unsatisfiable';
  return { start, end };
}

const dispositionName = (name: string) => `attachment; filename="${name.replace(/["\\]/g, '_')}"; filename*=UTF-8''${encodeURIComponent(name)}`;

/** Answer `name` in `dir` as a download; the folder stays the caller's. */
export async function sendFile(dir: Dir, name: string, range: string | string[] | undefined, type = 'application/octet-stream'): Promise<Reply> {
  const { fh, stat } = await dir.openRead(name);
  const size = stat.size;
  const r = parseRange(range, size);
  const headers: Record<string, string> = { 'Content-Type': type, 'Accept-Ranges': 'bytes', 'Content-Disposition': dispositionName(name), 'Last-Modified': stat.mtime.toUTCString() };
  if (r === 'unsatisfiable') {
    await fh.close();
    return reply(416, '', { ...headers, 'Content-Range': `bytes */${size}` });
  }
  const start = r?.start ?? 0;
  const end = r?.end ?? size - 1;
  if (size === 0) {
    await fh.close();
    return reply(200, '', { ...headers, 'Content-Length': '0' });
  }
  const stream = fs.createReadStream('', { fd: fh as any, start, end, autoClose: true, highWaterMark: 1024 * 1024 });
  headers['Content-Length'] = String(end - start + 1);
  if (r) headers['Content-Range'] = `bytes ${start}-${end}/${size}`;
  return reply(r ? 206 : 200, stream, headers);
}
