/**
 * Websockets waiting on a login phrase (`/ws/id/<loginPhrase>`). Event-driven: the login that claims the
 * phrase pushes its answer to every socket subscribed on it; nothing polls. A socket is closed after the
 * push, when its phrase expires, or when the node stops. Only sockets already waiting get the answer (the
 * signature is never kept for late readers).
 */
import type { Socket } from '../../core/plugin-api.ts';

/** Close code after the login answer (the reference's code, which existing pages expect). */
export const CLOSE_LOGGED_IN = 4012;

export const errorEnvelope = (code: number, name: string, message: string) => ({ status: 'error', data: { code, name, message } });

export class LoginSockets {
  private readonly byPhrase = new Map<string, Set<Socket>>();
  private count = 0;

  constructor(private readonly limits: { perPhrase: number; total: number }) {}

  /** Send one envelope and close (ignoring a socket the client already closed). */
  static finish(ws: Socket, envelope: unknown, code = 1000): void {
    try {
      ws.send(JSON.stringify(envelope), () => ws.close(code));
    } catch {
      ws.terminate();
    }
  }

  /** Wait on `phrase` for at most `timeoutMs`; the error of `onTimeout` is sent when time runs out. */
  add(phrase: string, ws: Socket, timeoutMs: number, onTimeout: unknown): void {
    const set = this.byPhrase.get(phrase) ?? new Set<Socket>();
    if (set.size >= this.limits.perPhrase || this.count >= this.limits.total) {
      const why = set.size >= this.limits.perPhrase ? `${this.limits.perPhrase} sockets already wait on this login phrase` : 'too many login sockets are open on this node';
      LoginSockets.finish(ws, errorEnvelope(429, 'TooManySockets', `Refused: ${why}. Close other pages or try again shortly.`), 1013);
      return;
    }
    set.add(ws);
    this.byPhrase.set(phrase, set);
    this.count++;
    const timer = setTimeout(() => LoginSockets.finish(ws, onTimeout), Math.max(0, timeoutMs));
    timer.unref();
    ws.once('close', () => {
      clearTimeout(timer);
      if (set.delete(ws)) this.count--;
      if (set.size === 0 && this.byPhrase.get(phrase) === set) this.byPhrase.delete(phrase);
    });
    ws.on('error', () => ws.terminate());
  }

  /** Push the login answer to every socket waiting on `phrase`; returns how many got it. */
  push(phrase: string, envelope: unknown): number {
    const set = this.byPhrase.get(phrase);
    if (!set) return 0;
    this.byPhrase.delete(phrase);
    for (const ws of set) LoginSockets.finish(ws, envelope, CLOSE_LOGGED_IN);
    return set.size;
  }

  waiting(phrase: string): number {
    return this.byPhrase.get(phrase)?.size ?? 0;
  }

  closeAll(): void {
    for (const set of this.byPhrase.values()) for (const ws of set) ws.close(1001, 'node stopping');
    this.byPhrase.clear();
  }
}
