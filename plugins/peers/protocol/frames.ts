/**
 * The wire form. Every frame is one JSON text: `{"t":type,"n":seq,"k":senderKey,"d":"<data JSON>","s":sig}`.
 * The data travels as a string so the signature covers the exact bytes sent (`t \n n \n d`): no canonical
 * JSON is needed. `n` rises by one per frame on a link, so a frame replayed on the same link is refused.
 * The only unsigned frame is the accepting side's `challenge` (a nonce the other side must sign back).
 *
 * A broadcast message is signed by its origin once: `{m: "<{type,payload,origin,sentAt,nonce}>", s, h}`;
 * relays add the hop count `h` (not signed: it only limits how far a message goes, so a relay lying about it
 * can shorten its reach, which it could do anyway by not relaying). Its identity is sha256(m).
 */
import { sha256 } from './keys.ts';

export const LINK_TYPES = ['challenge', 'hello', 'ping', 'pong', 'peers', 'gossip', 'sync', 'syncbatch'] as const;
export type LinkType = (typeof LINK_TYPES)[number];
const KNOWN = new Set<string>(LINK_TYPES);

export interface Frame {
  t: LinkType;
  n: number;
  k: string;
  d: string;
  s: string;
}

export const signedText = (t: string, n: number, d: string) => `${t}\n${n}\n${d}`;

/** Why a received text is refused, or its frame. */
export function parseFrame(text: string): Frame | string {
  let f: any;
  try {
    f = JSON.parse(text);
  } catch {
    return 'malformed';
  }
  if (!f || typeof f !== 'object' || Array.isArray(f) || typeof f.t !== 'string' || typeof f.d !== 'string') return 'malformed';
  if (!KNOWN.has(f.t)) return 'unknown';
  if (f.t === 'challenge') return { t: f.t, n: 0, k: '', d: f.d, s: '' };
  if (typeof f.k !== 'string' || typeof f.s !== 'string' || !Number.isSafeInteger(f.n)) return 'unsigned';
  return f as Frame;
}

/** The origin-signed body of a broadcast message. */
export interface OriginBody {
  type: string;
  payload: unknown;
  origin: string;
  sentAt: number;
  nonce: string;
}

export interface Gossip {
  /** The origin-signed body, as text. */
  m: string;
  /** The origin's signature of `m`. */
  s: string;
  /** Hops travelled so far. */
  h: number;
}

export const messageHash = (m: string) => sha256(m);

export function parseOriginBody(m: string): OriginBody | null {
  let b: any;
  try {
    b = JSON.parse(m);
  } catch {
    return null;
  }
  if (!b || typeof b !== 'object' || typeof b.type !== 'string' || b.type.length < 1 || b.type.length > 64) return null;
  if (typeof b.origin !== 'string' || !Number.isFinite(b.sentAt) || typeof b.nonce !== 'string') return null;
  return b as OriginBody;
}

/** `ip:port` or `[ipv6]:port` (lib/net-addr). */
export { formatAddr, parseAddr } from '../../../lib/net-addr/addr.ts';
