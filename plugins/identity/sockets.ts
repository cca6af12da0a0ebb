/**
 * Websockets waiting on a login phrase (`/ws/id/<loginPhrase>`). Event-driven: the login that claims the
 * phrase pushes its answer to the socket waiting on it; nothing polls.
 *
 * First socket only: the login answer carries the signature, from which the `legacyidauth` header is
 * rebuilt (an admin session when the phrase was the operator's). So only the first socket ever opened on a
 * phrase waits on it: the page that fetched the phrase opens its socket at once, before it shows the phrase
 * to anyone (or to a wallet on another device). Any later socket on that phrase is refused, also after the
 * first one closed; a page that lost its socket asks for a new phrase.
 *
 * Bounds: one socket per phrase, `perAddress` sockets per client address (IPv6: per /64) and `total` in
 * all. A caller cannot fill the node's sockets from one address, and cannot take a phrase's socket without
 * knowing the phrase, which only its page has until it is shown.
 */
import type { Socket } from '../../core/plugin-api.ts';
import { addressKey } from './limits.ts';

/** Close code after the login answer (the reference's code, which existing pages expect). */
export const CLOSE_LOGGED_IN = 4012;

export const errorEnvelope = (code: number, name: string, message: string) => ({ status: 'error', data: { code, name, message } });

export interface SocketLimits {
  perAddress: number;
  total: number;
}

/** Phrases remembered as taken by a socket (each for its 15 minutes); past it the oldest is forgotten. */
const MAX_TAKEN = 100_000;

export class LoginSockets {
  private readonly waiting = new Map<string, Socket>();
  /** Phrases a socket was opened on, with the time their phrase expires: no second socket is let in. */
  private readonly taken = new Map<string, number>();
  private readonly perAddress = new Map<string, number>();

  constructor(
    private readonly limits: SocketLimits,
    private readonly now: () => number,
  ) {}

  /** Send one envelope and close (ignoring a socket the client already closed). */
  static finish(ws: Socket, envelope: unknown, code = 1000): void {
    try {
      ws.send(JSON.stringify(envelope), () => ws.close(code));
    } catch {
      ws.terminate();
    }
  }

  /**
   * Let `ws` wait on `phrase` (which expires at `expireAt`) for at most `timeoutMs`, or refuse it with an
   * envelope; the error `onTimeout` is sent when the wait ends without a login.
   */
  add(phrase: string, ws: Socket, ip: string, expireAt: number, timeoutMs: number, onTimeout: unknown): void {
    const addr = addressKey(ip);
    const refuse = (code: number, name: string, why: string) => LoginSockets.finish(ws, errorEnvelope(code, name, why), 1013);
    if (this.taken.has(phrase))
      return refuse(409, 'PhraseWatched', 'Another page already waits on this login phrase (only the first socket opened on a phrase gets its login). Request a new phrase with GET /id/loginphrase.');
    const mine = this.perAddress.get(addr) ?? 0;
    if (mine >= this.limits.perAddress)
      return refuse(429, 'TooManySockets', `Refused: ${this.limits.perAddress} login sockets are already open from your address. Close other login pages or try again shortly.`);
    if (this.waiting.size >= this.limits.total)
      return refuse(429, 'TooManySockets', 'Refused: too many login sockets are open on this node. Try again shortly.');

    this.sweep();
    while (this.taken.size >= MAX_TAKEN) this.taken.delete(this.taken.keys().next().value as string);
    this.taken.set(phrase, expireAt);
    this.waiting.set(phrase, ws);
    this.perAddress.set(addr, mine + 1);
    const timer = setTimeout(() => LoginSockets.finish(ws, onTimeout), Math.max(0, timeoutMs));
    timer.unref();
    ws.once('close', () => {
      clearTimeout(timer);
      if (this.waiting.get(phrase) === ws) this.waiting.delete(phrase);
      const n = (this.perAddress.get(addr) ?? 1) - 1;
      if (n > 0) this.perAddress.set(addr, n);
      else this.perAddress.delete(addr);
    });
    ws.on('error', () => ws.terminate());
  }

  /** Push the login answer to the socket waiting on `phrase`; returns how many got it (0 or 1). */
  push(phrase: string, envelope: unknown): number {
    const ws = this.waiting.get(phrase);
    if (!ws) return 0;
    this.waiting.delete(phrase);
    LoginSockets.finish(ws, envelope, CLOSE_LOGGED_IN);
    return 1;
  }

  /** Forget taken phrases whose time is over (the Map is in opening order, about the order they expire). */
  sweep(): void {
    const now = this.now();
    for (const [p, expireAt] of this.taken) {
      if (expireAt > now) break;
      this.taken.delete(p);
    }
  }

  get open(): number {
    return this.waiting.size;
  }

  closeAll(): void {
    for (const ws of this.waiting.values()) ws.close(1001, 'node stopping');
    this.waiting.clear();
  }
}
