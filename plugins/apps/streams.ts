/**
 * How many log and stats reads (`applog`, `applogpolling`, `appstats`) run at once, per caller and on
 * the whole node. Each holds a connection to Docker and makes dockerd read a log file or sample a
 * container for as long as it runs, and a streamed log runs as long as its client reads slowly: one owner
 * opening many would take Docker and the node from every other tenant. A read over either bound is
 * refused at once with body code 429 `TooManyStreams` (HTTP 200, the envelope of a handled request),
 * naming the bound; the slot is given back when the answer has been sent or the client went away.
 */
import type { Readable } from 'node:stream';
import { ApiError, Reply, type HandlerInput, type PlainHandler } from '../../core/plugin-api.ts';

export interface StreamBounds {
  /** Reads one caller (wallet id) may have running at once. */
  perCaller: number;
  /** Reads running at once on the node, every caller together. */
  total: number;
}

const isReadable = (b: unknown): b is Readable => !!b && typeof (b as Readable).pipe === 'function' && typeof (b as Readable).once === 'function';

export class StreamLimits {
  private readonly byCaller = new Map<string, number>();
  private running = 0;

  constructor(readonly bounds: StreamBounds) {}

  get active() {
    return this.running;
  }

  /** A slot for `who`, or the refusal; the function returned gives it back (once). */
  take(who: string): () => void {
    const mine = this.byCaller.get(who) ?? 0;
    if (mine >= this.bounds.perCaller)
      throw new ApiError(429, 'TooManyStreams', `Refused: you already have ${mine} log or stats reads running (at most ${this.bounds.perCaller} at once per caller); let one finish and try again`);
    if (this.running >= this.bounds.total)
      throw new ApiError(429, 'TooManyStreams', `Refused: this node is running ${this.running} log or stats reads (at most ${this.bounds.total} at once); try again shortly`);
    this.byCaller.set(who, mine + 1);
    this.running++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.running--;
      const n = (this.byCaller.get(who) ?? 1) - 1;
      if (n > 0) this.byCaller.set(who, n);
      else this.byCaller.delete(who);
    };
  }

  /** `fn` run under a slot of its caller: held until a streamed answer closes, else until it returns. */
  limit(fn: PlainHandler): PlainHandler {
    return async (input: HandlerInput) => {
      const release = this.take(input.caller.legacyid ?? `ip:${input.ip}`);
      let out: unknown;
      try {
        out = await fn(input);
      } catch (e) {
        release();
        throw e;
      }
      const body = out instanceof Reply ? out.body : undefined;
      // 'close' comes after the last byte went out, after an error, and when the host destroys the
      // stream because the client went away.
      if (isReadable(body)) body.once('close', release);
      else release();
      return out;
    };
  }
}
