/**
 * The memory all request bodies in flight may hold, in all and per caller address. Measured before: 1,000
 * connections each sending 2.2 MB of a body and stalling held 1.45 GB. A request's ticket is charged by
 * readRaw as chunks arrive and released when its answer is done; a refused chunk answers 503 (the spec's
 * "not available, try again") with `Connection: close`.
 *
 * One body is always allowed up to its route's limit when it is its address's only body in flight (a 25 MB
 * webhook from one git host must pass a 16 MB per-address budget); the per-address bound is on the sum.
 */
import type http from 'node:http';

const TICKET = Symbol('bodyTicket');

export class BodyBudget {
  used = 0;
  private readonly byAddress = new Map<string, { bytes: number; bodies: number }>();

  constructor(
    readonly total: number,
    readonly perAddress: number,
  ) {}

  /** A ticket for one request from `address`; charge() refuses a chunk over either budget. */
  ticket(address: string): BodyTicket {
    return new BodyTicket(this, address);
  }

  /** @internal */
  take(address: string, n: number, first: boolean): boolean {
    const a = this.byAddress.get(address) ?? { bytes: 0, bodies: 0 };
    if (this.used + n > this.total) return false;
    const bodies = a.bodies + (first ? 1 : 0);
    if (bodies > 1 && a.bytes + n > this.perAddress) return false;
    a.bytes += n;
    a.bodies = bodies;
    this.byAddress.set(address, a);
    this.used += n;
    return true;
  }

  /** @internal */
  give(address: string, n: number, counted: boolean): void {
    const a = this.byAddress.get(address);
    this.used -= n;
    if (!a) return;
    a.bytes -= n;
    if (counted) a.bodies--;
    if (a.bodies <= 0) this.byAddress.delete(address);
  }
}

export class BodyTicket {
  held = 0;
  private counted = false;
  private released = false;
  res?: http.ServerResponse;

  constructor(
    private readonly budget: BodyBudget,
    private readonly address: string,
  ) {}

  /** The refusal ends the connection: the rest of the body is not read (a lingering close discards it). */
  refuse(): void {
    if (this.res && !this.res.headersSent) this.res.setHeader('Connection', 'close');
  }

  /** Account `n` more bytes of this body; false when the budget refuses them (nothing is charged). */
  charge(n: number): boolean {
    if (this.released) return true;
    const ok = this.budget.take(this.address, n, !this.counted);
    if (!ok) return false;
    this.counted = true;
    this.held += n;
    return true;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.held || this.counted) this.budget.give(this.address, this.held, this.counted);
    this.held = 0;
  }
}

/** Give the request a ticket, released when its answer is finished or the connection ends. */
export function attachTicket(req: http.IncomingMessage, res: http.ServerResponse, budget: BodyBudget): void {
  const ticket = budget.ticket(addressOf(req));
  ticket.res = res;
  (req as unknown as Record<symbol, BodyTicket>)[TICKET] = ticket;
  res.once('close', () => ticket.release());
}

export function ticketOf(req: http.IncomingMessage): BodyTicket | undefined {
  return (req as unknown as Record<symbol, BodyTicket | undefined>)[TICKET];
}

/** The caller's address; IPv4-mapped IPv6 folded to IPv4. */
function addressOf(req: http.IncomingMessage): string {
  const a = req.socket.remoteAddress ?? '?';
  return a.startsWith('::ffff:') ? a.slice(7) : a;
}
