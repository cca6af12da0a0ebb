/**
 * Connection-level protections of a listener: what one TCP connection, or all of them together, may cost.
 *
 * - Pipelining: Node parses every request of a chunk at once and runs them all, so 8 connections sending
 *   1,600 pipelined `GET /openapi.json` and never reading built 12,800 answers of 244 KB (heap +70 MB/s,
 *   then death). Here one request per connection runs at a time; the next runs once the previous answer is
 *   handed to the socket and less than `bufferedBytes` of it is unsent. While requests wait, reading the
 *   connection pauses (backpressure); more than `queuedPerConnection` parsed and waiting closes it.
 * - Descriptors: with `ulimit -n 1024`, 1,100 idle connections left no descriptor for the stores and the
 *   process died. Connections are capped below the soft RLIMIT_NOFILE; at the cap a new connection evicts
 *   the longest-idle one (no request in flight), or is closed itself when none is idle. Accept errors
 *   (EMFILE) are logged, never thrown.
 * - Stalls: a request body that stops arriving for `bodyIdleMs`, and answers the client does not read for
 *   `sendStallMs`, close the connection (a sweep each second), instead of holding memory for minutes.
 * - Lingering close: an answer sent with `Connection: close` before the request body was read (413, 503)
 *   half-closes, then keeps reading and discarding for up to `lingerMs` / `lingerBytes`, so the client
 *   reads the answer instead of a reset.
 * - Bodies in flight: a budget of bytes for all request bodies being held (and per caller address), charged
 *   by `readRaw` through the request's ticket (see body.ts).
 */
import fs from 'node:fs';
import type http from 'node:http';
import type net from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import { BodyBudget, attachTicket } from './body-budget.ts';

export interface ConnectionLimits {
  /** Open connections (HTTP and websocket) at most; 0: derived from the soft descriptor limit. */
  maxConnections: number;
  /**
   * Parsed requests waiting on one connection before it is closed. Reading pauses at `pauseAt`, but one
   * 64 KB read can hold 1,600 small requests, each ~1.7 KB once parsed (measured): this bounds that read.
   */
  queuedPerConnection: number;
  /** Waiting requests at which reading the connection pauses. */
  pauseAt: number;
  /** Unsent answer bytes on one connection before its next request runs. */
  bufferedBytes: number;
  /** A connection with unsent answer bytes and no progress for this long is closed. */
  sendStallMs: number;
  /** A request body being read that receives nothing for this long closes its connection. */
  bodyIdleMs: number;
  lingerMs: number;
  lingerBytes: number;
  /** Bytes of request bodies held at once, in all and per caller address. */
  bodyBytes: number;
  bodyBytesPerAddress: number;
}

export const DEFAULT_LIMITS: Omit<ConnectionLimits, 'maxConnections' | 'bodyIdleMs' | 'bodyBytes' | 'bodyBytesPerAddress'> = {
  queuedPerConnection: 128,
  pauseAt: 8,
  bufferedBytes: 1 << 20,
  sendStallMs: 30_000,
  lingerMs: 3000,
  lingerBytes: 8 << 20,
};

/** The soft RLIMIT_NOFILE of this process (from /proc/self/limits), or undefined (unlimited, not Linux). */
export function softFdLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    return m && m[1] !== 'unlimited' ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Connections allowed for a descriptor limit: the rest is kept for the stores (nedb opens a file per
 * write and two per compaction), daemon RPC sockets, watchers, uploads and logs. Measured: an idle node
 * holds about 40 descriptors; 1/8 of the limit, at least 128, leaves a wide margin.
 */
export function connectionCap(fdLimit: number | undefined): number {
  if (fdLimit === undefined) return 100_000;
  const reserve = Math.max(128, Math.floor(fdLimit / 8));
  return Math.max(16, fdLimit - reserve);
}

interface Conn {
  socket: net.Socket;
  queue: (() => void)[];
  active: boolean;
  req?: http.IncomingMessage;
  res?: http.ServerResponse;
  upgraded: boolean;
  lastActive: number;
  paused: boolean;
  resumeSocket: () => void;
  lingering: boolean;
  /** Progress marks for the stall sweep. */
  readMark: number;
  readAt: number;
  writeMark: number;
  writeAt: number;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export class ConnectionGuard {
  readonly cap: number;
  readonly budget: BodyBudget;
  private readonly conns = new Map<net.Socket, Conn>();
  private sweeper?: NodeJS.Timeout;
  private readonly servers = new Set<http.Server>();
  /** Counters for logs and tests. */
  readonly stats = { evicted: 0, refused: 0, pipelineClosed: 0, stalled: 0, lingered: 0 };

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly log: Logger,
  ) {
    this.cap = limits.maxConnections || connectionCap(softFdLimit());
    this.budget = new BodyBudget(limits.bodyBytes, limits.bodyBytesPerAddress);
  }

  get open(): number {
    return this.conns.size;
  }

  attach(server: http.Server): void {
    // Node drops connections over server.maxConnections before we could evict an idle one; our own cap is
    // below it, so this is only the backstop.
    server.maxConnections = this.cap + 16;
    // Over TLS the requests' socket is the TLS socket, known once the handshake is done (Node's own
    // maxConnections above counts the handshakes too).
    server.on(server instanceof tls.Server ? 'secureConnection' : 'connection', (socket: net.Socket) => this.admit(socket));
    server.on('upgrade', (req: http.IncomingMessage) => {
      const c = this.conns.get(req.socket);
      if (c) c.upgraded = true;
    });
    // Without a listener an accept error (EMFILE, ENFILE) is thrown and ends the process.
    server.on('error', (err) => this.log.error({ err: (err as Error).message }, 'listener error (connections are capped; the node keeps serving)'));
    server.on('drop', () => this.stats.refused++);
    // One sweep for all the listeners this guard serves (HTTP and HTTPS), until the last one closes.
    this.servers.add(server);
    if (!this.sweeper) {
      this.sweeper = setInterval(() => this.sweep(), 1000);
      this.sweeper.unref();
    }
    server.once('close', () => {
      this.servers.delete(server);
      if (this.servers.size) return;
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    });
  }

  /** The request handler with per-connection ordering and backpressure around `handler`. */
  wrap(handler: Handler): Handler {
    return (req, res) => {
      const c = this.conns.get(req.socket);
      if (!c) return handler(req, res);
      if (req.socket.destroyed) return;
      c.lastActive = Date.now();
      if (c.queue.length >= this.limits.queuedPerConnection) {
        // Deeper than any real client pipelines: the rest of what it sent is not worth parsing.
        this.stats.pipelineClosed++;
        this.log.debug({ remote: req.socket.remoteAddress }, 'connection closed: too many pipelined requests waiting');
        c.queue.length = 0;
        req.socket.destroy();
        return;
      }
      c.queue.push(() => this.run(c, req, res, handler));
      if (c.queue.length >= this.limits.pauseAt) this.pause(c);
      this.pump(c);
    };
  }

  private admit(socket: net.Socket): void {
    if (this.conns.size >= this.cap && !this.evictIdle()) {
      this.stats.refused++;
      socket.destroy();
      return;
    }
    const now = Date.now();
    const c: Conn = {
      socket,
      queue: [],
      active: false,
      upgraded: false,
      lastActive: now,
      paused: false,
      resumeSocket: () => undefined,
      lingering: false,
      readMark: 0,
      readAt: now,
      writeMark: 0,
      writeAt: now,
    };
    this.conns.set(socket, c);
    socket.once('close', () => {
      this.conns.delete(socket);
      c.queue.length = 0;
    });
    // Node releases its own pipelining brake whenever its buffered answers drain (socketOnDrain: parser
    // and socket resumed), which would lift ours too; while we hold the connection, that resume re-pauses.
    const resume = socket.resume;
    c.resumeSocket = () => resume.call(socket);
    socket.resume = function (this: net.Socket) {
      if (c.paused && !socket.destroyed) {
        const s = socket as net.Socket & { _paused?: boolean; parser?: { pause(): void } | null };
        s._paused = true;
        s.parser?.pause();
        return socket;
      }
      return resume.call(socket);
    };
    // Node ends a connection after an answer with `Connection: close` through destroySoon(); when the
    // request body is still arriving, that close would reset the client before it reads the answer.
    const destroySoon = socket.destroySoon.bind(socket);
    socket.destroySoon = () => {
      const req = c.req;
      if (req && !req.complete && !c.lingering && !socket.destroyed && !awaitsContinue(req, c.res)) this.linger(c, req);
      else destroySoon();
    };
  }

  /** Close the connection idle the longest (no request in flight, not a websocket); false if none is. */
  private evictIdle(): boolean {
    let oldest: Conn | undefined;
    for (const c of this.conns.values()) {
      if (c.active || c.queue.length || c.upgraded || c.lingering) continue;
      if (!oldest || c.lastActive < oldest.lastActive) oldest = c;
    }
    if (!oldest) return false;
    this.stats.evicted++;
    this.conns.delete(oldest.socket);
    oldest.socket.destroy();
    return true;
  }

  private run(c: Conn, req: http.IncomingMessage, res: http.ServerResponse, handler: Handler): void {
    c.active = true;
    c.req = req;
    c.res = res;
    c.readMark = c.socket.bytesRead;
    c.readAt = Date.now();
    attachTicket(req, res, this.budget);
    res.once('close', () => {
      c.active = false;
      c.lastActive = Date.now();
      this.pump(c);
    });
    handler(req, res);
  }

  private pump(c: Conn): void {
    if (c.active) return;
    const s = c.socket;
    if (s.destroyed) {
      c.queue.length = 0;
      return;
    }
    if (!c.queue.length) {
      this.resume(c);
      return;
    }
    if (s.writableLength > this.limits.bufferedBytes) {
      // The client is not reading its answers: stop reading its requests until it does (the sweep closes
      // it after sendStallMs without progress).
      this.pause(c);
      s.once('drain', () => this.pump(c));
      return;
    }
    c.queue.shift()!();
    if (c.queue.length < this.limits.pauseAt) this.resume(c);
  }

  /** Stop reading: the same flags Node's own pipelining brake sets (`_paused`, parser paused). */
  private pause(c: Conn): void {
    const s = c.socket as net.Socket & { _paused?: boolean; parser?: { pause(): void } | null };
    c.paused = true;
    if (s._paused) return;
    s._paused = true;
    s.parser?.pause();
    s.pause();
  }

  private resume(c: Conn): void {
    if (!c.paused) return;
    c.paused = false;
    const s = c.socket as net.Socket & { _paused?: boolean; parser?: { resume(): void } | null };
    if (!s._paused || s.destroyed) return;
    s._paused = false;
    s.parser?.resume();
    c.resumeSocket();
  }

  /** Half-close after the answer, discard what the client still sends (bounded), then close. */
  private linger(c: Conn, req: http.IncomingMessage): void {
    c.lingering = true;
    this.stats.lingered++;
    const s = c.socket;
    const start = s.bytesRead;
    const done = () => {
      clearInterval(poll);
      clearTimeout(timer);
      if (!s.destroyed) s.destroy();
    };
    const timer = setTimeout(done, this.limits.lingerMs);
    const poll = setInterval(() => s.bytesRead - start > this.limits.lingerBytes && done(), 50);
    timer.unref();
    poll.unref();
    req.once('end', done);
    s.once('end', done);
    s.once('close', done);
    req.resume();
    this.resume(c);
    s.end();
  }

  /** Once a second: close connections whose body stopped arriving or whose answers are not read. */
  private sweep(): void {
    const now = Date.now();
    for (const c of this.conns.values()) {
      const s = c.socket;
      if (s.destroyed || c.upgraded || c.lingering) continue;
      if (s.bytesWritten !== c.writeMark || s.writableLength === 0) {
        c.writeMark = s.bytesWritten;
        c.writeAt = now;
      } else if (now - c.writeAt > this.limits.sendStallMs) {
        this.stats.stalled++;
        s.destroy();
        continue;
      }
      const req = c.req;
      // A body counts as stalled only while someone reads it (a parked request is not the sender's fault).
      if (c.active && req && !req.complete && req.readableFlowing) {
        if (s.bytesRead !== c.readMark) {
          c.readMark = s.bytesRead;
          c.readAt = now;
        } else if (now - c.readAt > this.limits.bodyIdleMs) {
          this.stats.stalled++;
          this.log.debug({ remote: s.remoteAddress }, 'request body stalled; connection closed');
          s.destroy();
        }
      } else {
        c.readMark = s.bytesRead;
        c.readAt = now;
      }
    }
  }
}

/** `Expect: 100-continue` and no 100 sent: the client never started the body, nothing to linger for. */
function awaitsContinue(req: http.IncomingMessage, res: http.ServerResponse | undefined): boolean {
  return req.headers.expect === '100-continue' && !(res as { _sent100?: boolean } | undefined)?._sent100;
}
