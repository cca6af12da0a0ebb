/**
 * The DOS sources that need the peer network or the node's history (facts §4.3), used by dossources.ts:
 *
 * - too few peers: +0.13 for every minute the node lacks the peers `/core/checkcommunication` asks for
 *   (`peers.minimums`; about 75 minutes to a ban);
 * - the node's own availability, asked of its peers: +2 for each round in which peers answer that they
 *   cannot reach its API at its public address;
 * - the public IP changed more than once within 20 h: +11.
 */
import type { Collection, Clock } from '../../core/plugin-api.ts';
import { callNode } from '../../lib/node-http/request.ts';
import type { PeerLink } from '../peers/api.ts';

export const FEW_PEERS_PER_MINUTE = 0.13;
export const NOT_REACHABLE = 2;
export const IP_CHANGES = 11;
export const IP_WINDOW_MS = 20 * 3600_000;

export interface Failure {
  amount: number;
  why: string;
}

/**
 * Too few peers, measured between rounds: the time from the previous round that judged the peers counts
 * at 0.13 a minute while the latest round still finds a shortfall. A round that could not judge (no
 * benchmark, no peer plugin) breaks the measure, so time nobody looked is never charged. The counter keeps
 * two decimals: the hundredths of short rounds are carried over, not lost (a 2-minute round adds 0.26).
 */
export function fewPeersMeter(clock: Clock) {
  let last: number | undefined;
  let carry = 0;
  return {
    pause() {
      last = undefined;
      carry = 0;
    },
    judge(short: string[]): Failure | null {
      const now = clock.now();
      const since = last;
      last = now;
      if (!short.length) {
        carry = 0;
        return null;
      }
      if (since !== undefined) carry += (FEW_PEERS_PER_MINUTE * Math.max(0, now - since)) / 60_000;
      const amount = Math.floor(carry * 100) / 100;
      carry -= amount;
      return { amount, why: `Not enough connections to the Core network: ${short.join('; ')}` };
    },
  };
}

export type Verdict = { verdict: 'available' | 'unavailable' | 'none'; detail: string };

/** Fisher-Yates on a copy. */
function shuffled<T>(a: T[]): T[] {
  const b = [...a];
  for (let i = b.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [b[i], b[j]] = [b[j], b[i]];
  }
  return b;
}

/**
 * Ask peers whether they reach this node at `ip:port`, through their `/core/checkcoreavailability` (the
 * reference's way: a confirmed node probes the asking node's `/core/version`). Peers are asked in turn,
 * outgoing ones first (this node chose them; anybody can dial in), at most one per IP and `ask` in all,
 * until one answers `available`. The check fails only when some peer says `NotAvailable` and none says
 * available, so one lying peer cannot charge the node while an honest one is among those asked. A peer that
 * cannot be asked, or answers anything else (the node is not in its list, its daemon is away), gives no
 * verdict; with no verdict at all nothing is judged.
 */
export async function askPeers(links: PeerLink[], own: { ip: string; port: number }, o: { ask: number; timeoutMs: number; signal?: AbortSignal }): Promise<Verdict> {
  const seen = new Set<string>();
  const order = [...shuffled(links.filter((l) => l.direction === 'outbound')), ...shuffled(links.filter((l) => l.direction === 'inbound'))].filter(
    (l) => !seen.has(l.ip) && seen.add(l.ip),
  );
  const refusals: string[] = [];
  for (const peer of order.slice(0, o.ask)) {
    if (o.signal?.aborted) break;
    let body: { status?: unknown; data?: { name?: unknown; message?: unknown } };
    try {
      // The peer waits up to its own timeout for this node's answer: give it that and a margin. At most
      // 16 KB is read: a peer's answer is tiny, and a hostile one must not make this node read more. Over
      // HTTPS where the peer offers it (lib/node-http).
      const res = await callNode(peer.ip, peer.port, `/core/checkcoreavailability/${own.ip}/${own.port}`, { timeoutMs: o.timeoutMs * 2, signal: o.signal, maxBytes: 16_384 });
      body = JSON.parse(res.text);
    } catch {
      continue;
    }
    if (body?.status === 'success') return { verdict: 'available', detail: `${peer.ip}:${peer.port}` };
    if (body?.status === 'error' && body.data?.name === 'NotAvailable') refusals.push(`${peer.ip}:${peer.port} (${String(body.data.message ?? '').slice(0, 200)})`);
  }
  if (o.signal?.aborted) return { verdict: 'none', detail: 'stopping' };
  return refusals.length
    ? { verdict: 'unavailable', detail: `Core ${own.ip}:${own.port} is not reachable by its peers: ${refusals.join('; ')}` }
    : { verdict: 'none', detail: '' };
}

interface IpRecord {
  _id: 'publicip';
  ip: string;
  /** When the IP changed (ms), within the window. */
  changes: number[];
}

/**
 * The node's public IP over time (kept in the node's store, so a restart forgets nothing): `observe` records
 * a change when the IP differs from the last one seen (the first IP ever seen is none) and answers the
 * changes within the last 20 h.
 */
export function ipHistory(store: Collection, clock: Clock) {
  let rec: IpRecord | null | undefined;
  return {
    async observe(ip: string): Promise<{ from?: string; changes: number }> {
      if (rec === undefined) rec = ((await store.findOne({ _id: 'publicip' })) as IpRecord | null) ?? null;
      const now = clock.now();
      let from: string | undefined;
      const changes = (rec?.changes ?? []).filter((t) => now - t < IP_WINDOW_MS);
      if (rec && rec.ip !== ip) {
        from = rec.ip;
        changes.push(now);
      }
      const next: IpRecord = { _id: 'publicip', ip, changes };
      if (!rec || from !== undefined || changes.length !== rec.changes.length) await store.update({ _id: 'publicip' }, next, { upsert: true });
      rec = next;
      return { from, changes: changes.length };
    },
  };
}
