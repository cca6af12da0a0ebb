/**
 * The websocket transport: outgoing links with the `ws` client (bound to this node's own address, so the
 * other side sees the IP this node is known by), incoming links from the host's `/ws/core` route.
 *
 * Outgoing links run over TLS (`wss://`) where the peer offers it: at the HTTPS port its hello named (the
 * process's memory of offers, lib/node-http/offers.ts), falling back to `ws://` on its API port; an address
 * not heard from is dialled `ws://` first, then `wss://` on the same port when a TLS server closed the plain
 * request (a node serving HTTPS only on its API port).
 */
import WebSocket from 'ws';
import type { Socket } from '../../core/plugin-api.ts';
import { tlsOffers, urlHost, type TlsOffers } from '../../lib/node-http/offers.ts';
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
export function linkOf(ws: WsLike, remoteIp: string, secure = false): Link {
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
    secure,
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

export function wsTransport(opts: { localAddress?: string; maxPayload: number; path: string; timeoutMs: number; offers?: TlsOffers }): Transport {
  const offers = opts.offers ?? tlsOffers;
  const dial = (ip: string, port: number, secure: boolean) =>
    new Promise<Link>((resolve, reject) => {
      const ws = new WebSocket(`${secure ? 'wss' : 'ws'}://${urlHost(ip)}:${port}${opts.path}`, {
        localAddress: opts.localAddress,
        maxPayload: opts.maxPayload,
        handshakeTimeout: opts.timeoutMs,
        perMessageDeflate: false,
        // Nodes' certificates are usually self-signed and are not what a peer is trusted by: a peer is the
        // node key it proves in the handshake (every frame after it signed with that key), whatever the
        // certificate says. TLS keeps the link private; the handshake authenticates it.
        rejectUnauthorized: false,
      });
      const link = linkOf(ws, ip, secure);
      ws.once('open', () => resolve(link));
      ws.once('error', (e) => reject(e));
      ws.once('unexpected-response', (_req, res) => {
        // The node answered (a refusal, or 503 while it boots): no other way to it is tried.
        reject(Object.assign(new Error(`refused with HTTP ${res.statusCode}`), { answered: true }));
        ws.terminate();
      });
    });
  return {
    connect: (ip, port) => offers.reach(ip, port, (a) => dial(ip, a.port, a.secure)),
    offered: (ip, port, tls) => {
      // A hello without `tls` (an older node, or one serving plain HTTP only) leaves what was learned: a
      // node serving HTTPS only was found by trying, and a stale offer falls back to plain by itself.
      if (tls) offers.offer(ip, port, tls);
    },
  };
}

/** The host's upgraded socket as a Link. */
export const linkOfSocket = (s: Socket, ip: string, secure = false) => linkOf(s as unknown as WsLike, ip.replace(/^::ffff:/, ''), secure);
