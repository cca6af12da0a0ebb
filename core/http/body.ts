/** Reading request bodies under a size limit: too large answers 413 before (or while) reading, never after. */
import type { IncomingMessage } from 'node:http';
import { ApiError } from './reply.ts';
import { ticketOf } from './body-budget.ts';

/** Nesting deeper than this is refused (400): 10,000-deep JSON overflowed the stack in validation (500). */
export const MAX_JSON_DEPTH = 64;

function busy(): ApiError {
  return new ApiError(503, 'ServerBusy', 'The node is receiving too many request bodies at once; try again shortly', 503);
}

export function tooLarge(limit: number): ApiError {
  return new ApiError(413, 'PayloadTooLarge', `Request body too large: the limit of this route is ${limit} bytes`, 413);
}

/** The declared length already over the limit: refuse without reading a byte. */
export function declaredTooLarge(req: IncomingMessage, limit: number): boolean {
  const len = req.headers['content-length'];
  return len !== undefined && Number(len) > limit;
}

/**
 * `into`: a buffer the caller reuses for every body it reads (a few large buffers kept, instead of a new
 * one per request that the garbage collector frees late); the answer is then a view of it.
 */
export function readRaw(req: IncomingMessage, limit: number, into?: Buffer): Promise<Buffer> {
  // A declared length is read straight into one buffer: holding the chunks and then their concatenation
  // doubled the memory of a large body (24 MB uploads held 48 MB each).
  const declared = Number(req.headers['content-length']);
  if (Number.isInteger(declared) && declared <= limit && into && declared <= into.length) return readDeclared(req, declared, into);
  const ticket = ticketOf(req);
  if (Number.isInteger(declared) && declared > 64 * 1024 && declared <= limit) {
    // The whole declared length is allocated at once: it counts against the body budget at once.
    if (ticket && !ticket.charge(declared)) {
      ticket.refuse();
      return Promise.reject(busy());
    }
    return readDeclared(req, declared);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause(); // stop reading; the 413 goes out with Connection: close
        reject(tooLarge(limit));
        return;
      }
      if (ticket && !ticket.charge(chunk.length)) {
        cleanup();
        req.pause();
        ticket.refuse();
        reject(busy());
        return;
      }
      chunks.push(chunk);
    };
    const cleanup = readBody(req, onData, () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)), reject);
  });
}

function readDeclared(req: IncomingMessage, length: number, into?: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const buf = into ? into.subarray(0, length) : Buffer.allocUnsafe(length);
    let size = 0;
    readBody(
      req,
      (chunk) => {
        // Node's parser stops at Content-Length; more here would be a parser bug, never trusted.
        const n = Math.min(chunk.length, length - size);
        chunk.copy(buf, size, 0, n);
        size += n;
      },
      () => resolve(size === length ? buf : buf.subarray(0, size)),
      reject,
    );
  });
}

/**
 * The listeners of one body read: `onData` per chunk, `onEnd` once it is whole, a failed or aborted read
 * rejected as 400. Returns the function that detaches them all (a reader that refuses mid-body calls it).
 */
function readBody(req: IncomingMessage, onData: (chunk: Buffer) => void, onEnd: () => void, reject: (e: unknown) => void): () => void {
  const cleanup = () => {
    req.off('data', onData);
    req.off('end', end);
    req.off('error', error);
    req.off('aborted', aborted);
  };
  const end = () => (cleanup(), onEnd());
  const error = (e: Error) => (cleanup(), reject(new ApiError(400, 'BadRequest', `The request body could not be read: ${e.message}`)));
  const aborted = () => (cleanup(), reject(new ApiError(400, 'BadRequest', 'The client aborted the request body')));
  req.on('data', onData);
  req.on('end', end);
  req.on('error', error);
  req.on('aborted', aborted);
  return cleanup;
}

/** raw-json: JSON whatever the content type; an empty body is an empty object. */
export function parseJsonBody(raw: Buffer): unknown {
  const text = raw.toString('utf8').trim();
  if (text === '') return {};
  if (text.length > MAX_JSON_DEPTH && jsonDepth(text) > MAX_JSON_DEPTH)
    throw new ApiError(400, 'BadRequest', `The request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, 'BadRequest', 'The request body is not valid JSON');
  }
}

/** The deepest nesting of arrays and objects in JSON text (brackets inside strings do not count). */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > max) max = depth;
    } else if (c === 93 || c === 125) depth--;
  }
  return max;
}
