/**
 * A hand-driven peer for the tests: opens `/ws/core` from 127.0.0.1, answers the challenge with a valid
 * signed hello (its own key), then sends whatever frames a test wants (forged, oversized, unknown...).
 */
import WebSocket from 'ws';
import { generateKeys, type NodeKeys } from '../../plugins/peers/protocol/keys.ts';
import { signedText } from '../../plugins/peers/protocol/frames.ts';

export class Rogue {
  readonly keys: NodeKeys = generateKeys();
  ws!: WebSocket;
  n = 0;
  closed: { code: number; reason: string } | null = null;
  opened = false;
  readonly received: any[] = [];

  /** `member`: the node-key proof over the node's nonce (membership nodelist), or none. */
  constructor(
    readonly url: string,
    readonly claimedPort: number,
    readonly member?: (peerKey: string, nonce: string) => unknown,
  ) {}

  /** Connect and finish the handshake; resolves once the node's hello arrived. */
  async join(): Promise<void> {
    this.ws = new WebSocket(this.url, { localAddress: '127.0.0.1', perMessageDeflate: false });
    this.ws.on('close', (code, reason) => (this.closed = { code, reason: reason.toString() }));
    this.ws.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      const myNonce = 'rogue-' + Math.random().toString(36).slice(2);
      this.ws.on('message', (raw) => {
        const f = JSON.parse(raw.toString());
        this.received.push(f);
        if (f.t === 'challenge') this.send('hello', { nonce: myNonce, echo: JSON.parse(f.d).nonce, port: this.claimedPort, v: '1', time: Date.now(), member: this.member?.(this.keys.publicKey, JSON.parse(f.d).nonce) });
        else if (f.t === 'hello') {
          this.opened = true;
          resolve();
        }
      });
      this.ws.once('close', (code) => reject(new Error(`closed during the handshake: ${code}`)));
    });
  }

  /** A correctly signed frame. */
  send(t: string, data: unknown) {
    const d = JSON.stringify(data);
    const n = ++this.n;
    this.ws.send(JSON.stringify({ t, n, k: this.keys.publicKey, d, s: this.keys.sign(signedText(t, n, d)) }));
  }

  /** A frame whose signature does not match its data. */
  forged(t: string, data: unknown) {
    const d = JSON.stringify(data);
    const n = ++this.n;
    this.ws.send(JSON.stringify({ t, n, k: this.keys.publicKey, d, s: this.keys.sign(signedText(t, n, d + 'x')) }));
  }

  raw(data: string | Buffer) {
    this.ws.send(data);
  }

  close() {
    this.ws?.terminate();
  }
}
