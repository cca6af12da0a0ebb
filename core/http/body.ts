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

export function readRaw(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const ticket = ticketOf(req);
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    };
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
    const onEnd = () => (cleanup(), resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
    const onError = (e: Error) => (cleanup(), reject(new ApiError(400, 'BadRequest', `The request body could not be read: ${e.message}`)));
    const onAborted = () => (cleanup(), reject(new ApiError(400, 'BadRequest', 'The client aborted the request body')));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
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
