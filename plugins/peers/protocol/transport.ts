/**
 * What the protocol needs from a transport: open a link to an address, and be handed the links others open.
 * The websocket transport (../ws-transport.ts) and the in-memory one (./memory.ts) both implement it, so the
 * protocol core runs unchanged on real nodes and in the simulation.
 */
export interface Link {
  /** The address the other end connects from (its IP), as the transport saw it. */
  readonly remoteIp: string;
  /** Whether the link runs over TLS (shown by /core/peers; the protocol itself does not depend on it). */
  readonly secure?: boolean;
  send(data: string | Buffer): void;
  /** Bytes sent on the link and not yet written out (what the other end has not taken). */
  buffered(): number;
  close(code?: number, reason?: string): void;
  /** Close at once, dropping what is still queued (a close frame would wait behind it). */
  abort(): void;
  onMessage(fn: (data: string | Buffer, isBinary: boolean) => void): void;
  onClose(fn: (code: number, reason: string) => void): void;
}

export interface Transport {
  /** Open a link to `ip:port`; rejects when the other end cannot be reached. */
  connect(ip: string, port: number): Promise<Link>;
  /**
   * A peer's hello said where it serves TLS: `tls` is its HTTPS port, 0 when it named none (an older node
   * names none). The node at `ip:port` (its API port) proved its key on the link that carried the hello.
   */
  offered?(ip: string, port: number, tls: number): void;
}
