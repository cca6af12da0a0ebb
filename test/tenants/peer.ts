/**
 * A peer of the test on a tenant node's `/ws/core`: a real PeerNode (the protocol as nodes speak it) from
 * 127.0.0.1 that records every message it is given, catch-up included. With `member`, it proves a node-list
 * key (membership `nodelist`); without, the node must run with `peers.membership: open`.
 */
import { generateKeys, type NodeKeys } from '../../plugins/peers/protocol/keys.ts';
import { PeerNode, type Delivered } from '../../plugins/peers/protocol/node.ts';
import { wsTransport } from '../../plugins/peers/ws-transport.ts';
import { proofText } from '../../plugins/peers/membership.ts';
import { until } from '../apps/support.ts';

export interface TestPeer {
  peer: PeerNode;
  keys: NodeKeys;
  /** Every message delivered to it, in order. */
  received: Delivered[];
  /** Everything delivered, as text (what a grep for a secret reads). */
  text(): string;
  stop(): void;
}

export async function joinPeer(nodePort: number, ownPort: number, member?: { pubKey: string; sign(text: string): string }): Promise<TestPeer> {
  const keys = generateKeys();
  const peer = new PeerNode(keys, wsTransport({ localAddress: '127.0.0.1', maxPayload: 65536, path: '/ws/core', timeoutMs: 5000 }), { ip: '127.0.0.1', port: ownPort, seeds: [] }, {
    ...(member ? { admission: { proof: (k: string, nonce: string) => ({ pubKey: member.pubKey, sig: member.sign(proofText(k, nonce)) }), admit: async () => ({ ok: true as const, pubKey: '' }) } } : {}),
    now: () => Date.now(),
    setTimer: (fn, ms) => {
      const t = setTimeout(fn, ms);
      return { clear: () => clearTimeout(t) };
    },
  });
  const received: Delivered[] = [];
  peer.onAny((m) => received.push(m));
  const r = await peer.connect(`127.0.0.1:${nodePort}`);
  if (r !== 'initiated') throw new Error(`test peer: ${r}`);
  await until(`test peer ${ownPort} joined`, async () => peer.outgoing().length === 1);
  return { peer, keys, received, text: () => received.map((m) => JSON.stringify(m)).join('\n'), stop: () => peer.stop() };
}
