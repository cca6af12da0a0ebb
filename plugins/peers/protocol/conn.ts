/** One link to a peer: its handshake state, counters and rate buckets. */
import { formatAddr } from '../../../lib/net-addr/addr.ts';
import type { Link } from './transport.ts';

export class Bucket {
  private tokens: number;
  private at: number;
  constructor(private readonly perSecond: number, private readonly burst: number, now: number) {
    this.tokens = burst;
    this.at = now;
  }
  take(now: number): boolean {
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.perSecond);
    this.at = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export class Conn {
  key = '';
  /** The listed node key the peer proved (membership `nodelist`; '' when open). */
  member = '';
  /** Frames that arrived while this side checks the peer's membership (null: not checking). */
  held: [string | Buffer, boolean][] | null = null;
  /** The other node's listening port (outbound: the one dialled; inbound: what its hello says). */
  port = 0;
  state: 'handshake' | 'open' | 'closed' = 'handshake';
  readonly nonce: string;
  seqOut = 0;
  seqIn = 0;
  connectedAt = 0;
  latency = -1;
  missedPongs = 0;
  lastPingTime = 0;
  lastPongTime = 0;
  badMessages = 0;
  messagesReceived = 0;
  messagesSent = 0;
  bytesReceived = 0;
  bytesSent = 0;
  /** The most bytes this link has had waiting to be written out to the peer. */
  sendQueuePeak = 0;
  remoteVersion = '';
  remoteClockOffsetMs = 0;
  lastTransmissionDelay = 0;
  /** The peer's own connections, as its last `peers` frame said. */
  report: { outbound: string[]; inbound: string[] } | null = null;
  timer?: ReturnType<typeof setTimeout>;

  constructor(
    readonly link: Link,
    readonly direction: 'outbound' | 'inbound',
    readonly ip: string,
    readonly text: Bucket,
    readonly binary: Bucket,
    nonce: string,
    readonly source: string,
  ) {
    this.nonce = nonce;
  }

  get addr() {
    return formatAddr(this.ip, this.port);
  }
}
