/**
 * The websocket transport: outgoing links with the `ws` client (bound to this node's own address, so the
 * other side sees the IP this node is known by), incoming links from the host's `/ws/core` route.
 */
import WebSocket from 'ws';
import type { Socket } from '../../core/plugin-api.ts';
import type { Link, Transport } from './protocol/transport.ts';

interface WsLike {
  /** Bytes queued and not yet handed to the OS (ws: the socket's write buffer and the sender's). */
  readonly bufferedAmount: number;
  send(data: string | Buffer): void;
  close(code?: number, reason?: string): void;
  terminate(): void;
  on(event: 'message', fn: (data: Buffer, isBinary: boolean) => void): unknown;
  on(event: 'close', fn: (code: number, reason: Buffer) => void): unknown;
  on(event: 'error', fn: (err: Error) => void): unknown;
}

/** A socket as a Link; frames that arrive before the protocol listens are held. */
export function linkOf(ws: WsLike, remoteIp: string): Link {
  let early: [Buffer, boolean][] | null = [];
  let onMsg: (d: string | Buffer, b: boolean) => void = () => {};
  let onClose: (code: number, reason: string) => void = () => {};
  let closed = false;
  let closeEarly: [number, string] | null = null;
  ws.on('message', (data, isBinary) => (early ? early.push([data, isBinary]) : onMsg(isBinary ? data : data.toString('utf8'), isBinary)));
  ws.on('close', (code, reason) => {
    if (closed) return;
    closed = true;
    if (early) closeEarly = [code, reason.toString()];
    else onClose(code, reason.toString());
  });
  ws.on('error', () => undefined); // 'close' follows
  return {
    remoteIp,
    send: (d) => ws.send(d),
    buffered: () => ws.bufferedAmount,
    abort: () => {
      closed = true;
      ws.terminate();
    },
    close: (code = 1000, reason = '') => {
      closed = true;
      try {
        ws.close(code, reason.slice(0, 120));
      } catch {
        ws.terminate();
      }
    },
    onMessage(fn) {
      onMsg = fn;
      const held = early ?? [];
      early = null;
      for (const [d, b] of held) fn(b ? d : d.toString('utf8'), b);
      if (closeEarly) onClose(...closeEarly);
    },
    onClose(fn) {
      onClose = fn;
    },
  };
}

export function wsTransport(opts: { localAddress?: string; maxPayload: number; path: string; timeoutMs: number }): Transport {
  return {
    connect: (ip, port) =>
      new Promise<Link>((resolve, reject) => {
        const ws = new WebSocket(`ws://${ip}:${port}${opts.path}`, {
          localAddress: opts.localAddress,
          maxPayload: opts.maxPayload,
          handshakeTimeout: opts.timeoutMs,
          perMessageDeflate: false,
        });
        const link = linkOf(ws, ip);
        ws.once('open', () => resolve(link));
        ws.once('error', (e) => reject(e));
        ws.once('unexpected-response', (_req, res) => {
          reject(new Error(`refused with HTTP ${res.statusCode}`));
          ws.terminate();
        });
      }),
  };
}

/** The host's upgraded socket as a Link. */
export const linkOfSocket = (s: Socket, ip: string) => linkOf(s as unknown as WsLike, ip.replace(/^::ffff:/, ''));
