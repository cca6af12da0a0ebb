/** Typed errors and explicit replies: how a handler says anything other than "here is the data". */

// Brands make `instanceof` hold across copies of this module (a test runner that loads core/ through
// require() while the host imports plugins through import() has two), so a plugin's typed error is never
// mistaken for a crash.
const API_ERROR = Symbol.for('corenode.ApiError');
const REPLY = Symbol.for('corenode.Reply');

/** An error answered in the envelope: `{status:'error', data:{code, name, message}}` at HTTP 200. */
export class ApiError extends Error {
  static override [Symbol.hasInstance](v: unknown): boolean {
    return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[API_ERROR] === true;
  }
  readonly [API_ERROR] = true;
  readonly code: number | string;
  override readonly name: string;
  /** Set for refusals that speak HTTP (the spec's wire statuses): 400, 403, 404, 413, 503. */
  readonly wireStatus?: number;

  constructor(code: number | string, name: string, message: string, wireStatus?: number) {
    super(message || 'Unknown error');
    this.code = code;
    this.name = name;
    this.wireStatus = wireStatus;
  }

  static badRequest(message: string) {
    return new ApiError(400, 'BadRequest', message);
  }
  static unauthorized() {
    return new ApiError(401, 'Unauthorized', 'Unauthorized. Access denied.');
  }
  static notFound(message: string) {
    return new ApiError(404, 'NotFound', message);
  }
}

/** A reply that bypasses the envelope: a status, a body (object, string, Buffer or stream) and headers. */
export class Reply {
  static [Symbol.hasInstance](v: unknown): boolean {
    return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[REPLY] === true;
  }
  readonly [REPLY] = true;
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

export function reply(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return new Reply(status, body, headers);
}

export interface ErrorData {
  code: number | string;
  name: string;
  message: string;
}

/** Turn anything thrown into the spec's error data; library errors never reach the wire as they are. */
export function toErrorData(err: unknown): ErrorData {
  if (err instanceof ApiError) return { code: err.code, name: err.name, message: err.message };
  return { code: 500, name: 'InternalError', message: 'The node could not complete the request; the error is logged' };
}

export const envelope = {
  data: (data: unknown) => ({ status: 'success' as const, data }),
  error: (data: ErrorData) => ({ status: 'error' as const, data }),
};
