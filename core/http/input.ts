/**
 * What a handler receives for one HTTP request. A class rather than an object literal: one fixed shape,
 * no closures per request, and the costly parts (the abort signal: an AbortController plus a socket
 * listener; the client address) are made only when a handler reads them.
 */
import type { Context } from 'koa';
import type { Caller, HandlerInput, RouteInfo } from '../plugin-api.ts';

const NOOP = () => {};

export class RequestInput implements HandlerInput {
  readonly headers: Record<string, string | string[] | undefined>;
  checkpoint: () => void = NOOP;
  readBody?: (into?: Buffer) => Promise<Buffer>;
  #ctx: Context;
  #signal?: AbortSignal;

  constructor(
    ctx: Context,
    readonly route: RouteInfo,
    public params: Record<string, any>,
    public query: Record<string, any>,
    public body: any,
    public rawBody: Buffer | undefined,
    public files: Record<string, unknown> | undefined,
    public caller: Caller,
  ) {
    this.#ctx = ctx;
    this.headers = ctx.req.headers;
  }

  /** Aborted when the client goes away before the answer is sent. */
  get signal(): AbortSignal {
    return (this.#signal ??= abortOnClose(this.#ctx));
  }

  set signal(v: AbortSignal) {
    this.#signal = v;
  }

  get ip(): string {
    return this.#ctx.ip;
  }

  get secure(): boolean {
    return this.#ctx.secure;
  }
}

function abortOnClose(ctx: Context): AbortSignal {
  const ac = new AbortController();
  ctx.res.once('close', () => {
    if (!ctx.res.writableFinished) ac.abort(new Error('client closed the connection'));
  });
  return ac.signal;
}
