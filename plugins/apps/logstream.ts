/**
 * A container's log read from Docker as a stream, never held whole. dockerode buffers a log answer
 * (`follow: false`) into one Buffer, and the text, its envelope and its JSON were three more copies: eight
 * concurrent `applog` of a 13 MB log took the node from 256 to 889 MB of RSS (measured). Here Docker's
 * answer goes through a streaming demultiplexer and a JSON-string escaper straight to the client, with the
 * client's pace as backpressure all the way to Docker's socket.
 */
import http from 'node:http';
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';

export interface LogQuery {
  tail: number | 'all';
  timestamps?: boolean;
  /** Docker's `since` (`seconds.nanoseconds`). */
  since?: string;
}

/** Largest Docker error body read (its JSON message). */
const MAX_ERROR_BYTES = 64 * 1024;

/**
 * GET the log of `container` over Docker's socket. Resolves with the answer once Docker said 200; a
 * refusal rejects as dockerode would (`statusCode` and `json.message`), before a byte went to the client.
 */
export function openLog(socketPath: string, container: string, q: LogQuery): Promise<http.IncomingMessage> {
  const qs = new URLSearchParams({ stdout: '1', stderr: '1', follow: '0', tail: String(q.tail), timestamps: q.timestamps ? '1' : '0' });
  if (q.since) qs.set('since', q.since);
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: `/containers/${encodeURIComponent(container)}/logs?${qs}` }, (res) => {
      if (res.statusCode === 200) return resolve(res);
      const parts: Buffer[] = [];
      let size = 0;
      res.on('data', (b: Buffer) => {
        if ((size += b.length) <= MAX_ERROR_BYTES) parts.push(b);
      });
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let json: { message?: string } = {};
        try {
          json = JSON.parse(text);
        } catch {
          json = { message: text.trim() || `HTTP ${res.statusCode}` };
        }
        reject(Object.assign(new Error(json.message ?? `HTTP ${res.statusCode}`), { statusCode: res.statusCode, json }));
      });
    });
    req.on('error', reject);
  });
}

/**
 * Docker's multiplexed stream (8-byte frame headers: stream type, 3 zero bytes, big-endian length) as the
 * frames' payload bytes in arrival order, frames split anywhere across chunks; a TTY container's log is
 * not multiplexed and passes through.
 */
export class Demux extends Transform {
  private header = Buffer.alloc(8);
  private have = 0;
  private left = 0;
  stdout = 0;
  stderr = 0;
  private kind = 1;

  constructor(private readonly tty: boolean) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
    if (this.tty) {
      this.stdout += chunk.length;
      return done(null, chunk);
    }
    let i = 0;
    while (i < chunk.length) {
      if (this.left === 0) {
        const n = Math.min(8 - this.have, chunk.length - i);
        chunk.copy(this.header, this.have, i, i + n);
        this.have += n;
        i += n;
        if (this.have < 8) break;
        this.have = 0;
        this.kind = this.header[0];
        this.left = this.header.readUInt32BE(4);
        continue;
      }
      const n = Math.min(this.left, chunk.length - i);
      if (this.kind === 2) this.stderr += n;
      else this.stdout += n;
      this.push(chunk.subarray(i, i + n));
      this.left -= n;
      i += n;
    }
    done();
  }
}

/**
 * Bytes of UTF-8 text as the success envelope `{"status":"success","data":"<text>"}`, the text escaped
 * piece by piece (JSON escapes each character alone, so the pieces join to what JSON.stringify of the
 * whole text gives). A character split across chunks is held until its last byte comes.
 */
export class TextEnvelope extends Transform {
  private readonly decoder = new StringDecoder('utf8');
  private started = false;
  /** When a chunk last went through (a transform runs only while the reader takes what it is given). */
  movedAt = Date.now();

  private start() {
    if (!this.started) {
      this.started = true;
      this.push('{"status":"success","data":"');
    }
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback) {
    this.movedAt = Date.now();
    this.start();
    const s = this.decoder.write(chunk);
    if (s) this.push(JSON.stringify(s).slice(1, -1));
    done();
  }

  override _flush(done: TransformCallback) {
    this.start();
    const s = this.decoder.end();
    if (s) this.push(JSON.stringify(s).slice(1, -1));
    done(null, '"}');
  }
}

/** How long a streamed log may make no progress (its client reading nothing) before it is cut. */
export const STALL_MS = 60_000;

/**
 * The log answer as the envelope stream; a failure of Docker mid-answer cuts the connection (the envelope
 * has started). A client that stops reading would hold its read slot (streams.ts) and Docker's connection
 * for ever: an answer that moves nothing for `stallMs` is cut.
 */
export function logEnvelope(res: http.IncomingMessage, tty: boolean, stallMs = STALL_MS): Readable {
  const out = new TextEnvelope();
  const check = setInterval(() => {
    if (Date.now() - out.movedAt > stallMs) out.destroy(new Error(`no progress for ${stallMs} ms`));
  }, Math.min(stallMs, 10_000));
  check.unref();
  out.once('close', () => clearInterval(check));
  pipeline(res, new Demux(tty), out, () => {});
  return out;
}

/**
 * The newest non-empty lines of the log that fit in `maxChars`, for answers bounded in lines (the polling
 * route's): a line count alone bounds nothing, as one line can be any length. Older lines are let go as
 * newer ones come; a line longer than the bound keeps its start (where its timestamp is). `cut`: something
 * was left out for the bound.
 */
export async function newestLines(res: http.IncomingMessage, tty: boolean, maxChars: number): Promise<{ lines: string[]; cut: boolean }> {
  const demux = new Demux(tty);
  const decoder = new StringDecoder('utf8');
  res.pipe(demux);
  res.on('error', (e) => demux.destroy(e));
  const lines: string[] = [];
  let first = 0;
  let chars = 0;
  let cut = false;
  let open = '';
  const add = (line: string) => {
    if (!line) return;
    if (line.length > maxChars) {
      line = line.slice(0, maxChars);
      cut = true;
    }
    lines.push(line);
    chars += line.length;
    while (chars > maxChars) {
      chars -= lines[first].length;
      first++;
      cut = true;
    }
    if (first > 1024 && first * 2 > lines.length) lines.splice(0, first), (first = 0);
  };
  const take = (s: string) => {
    const parts = (open + s).split('\n');
    open = parts.pop()!;
    for (const p of parts) add(p);
    // A line still open past the bound keeps its start only.
    if (open.length > maxChars) {
      open = open.slice(0, maxChars);
      cut = true;
    }
  };
  for await (const b of demux as AsyncIterable<Buffer>) take(decoder.write(b));
  take(decoder.end());
  add(open);
  return { lines: lines.slice(first), cut };
}
