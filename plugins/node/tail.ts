/**
 * The last lines of a file, read backwards from its end in blocks: the cost depends on the length of the
 * lines asked for, not on the size of the file (a 1 GB log is tailed as fast as a 1 MB one). A file whose
 * last lines are huge is cut at `maxBytes` from the end, so one answer stays bounded.
 */
import fs from 'node:fs/promises';

const BLOCK = 64 * 1024;

export async function tailLines(file: string, lines = 100, maxBytes = 4 * 1024 * 1024): Promise<string> {
  const fh = await fs.open(file, 'r');
  try {
    const { size } = await fh.stat();
    let pos = size;
    const chunks: Buffer[] = [];
    let newlines = 0;
    let read = 0;
    // A file ending in a newline: that last newline closes the last line, it does not start another.
    let skipLast = true;
    while (pos > 0 && read < maxBytes) {
      const len = Math.min(BLOCK, pos, maxBytes - read);
      pos -= len;
      const buf = Buffer.allocUnsafe(len);
      const { bytesRead } = await fh.read(buf, 0, len, pos);
      const chunk = buf.subarray(0, bytesRead);
      chunks.unshift(chunk);
      read += bytesRead;
      for (let i = chunk.length - 1; i >= 0; i--) {
        if (chunk[i] !== 0x0a) continue;
        if (skipLast && pos + i === size - 1) continue;
        if (++newlines === lines) {
          chunks[0] = chunk.subarray(i + 1);
          return Buffer.concat(chunks).toString('utf8');
        }
      }
      skipLast = false;
    }
    return Buffer.concat(chunks).toString('utf8');
  } finally {
    await fh.close();
  }
}
