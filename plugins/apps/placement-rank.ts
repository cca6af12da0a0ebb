/**
 * The orderings and draws of the placement planner (placement-plan.ts), kept apart because every node must
 * compute them the same way from the same facts: nothing here reads a clock, a random source or local
 * state, so two nodes that heard the same notices name the same nodes.
 */
import crypto from 'node:crypto';

/** A draw in [0, windowMs) from the caller's seed, the node and the app: each node's delay differs per app. */
export function delayOf(seed: string, node: string, app: string, windowMs: number): number {
  if (windowMs <= 0) return 0;
  const h = crypto.createHash('sha256').update(`${seed}\0${node}\0${app}`).digest();
  return Math.floor((h.readUInt32BE(0) / 0x1_0000_0000) * windowMs);
}

/** Back-off after `failures` failed installs of one app: base, doubling, at most max (1 min .. 1 h by default). */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  // 2 ** 30 is far past any max: the cap keeps the exponent from overflowing to Infinity.
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
}

const byKey = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Installers that stand down: those ranked after the first `slots` by (first announcement, then node key).
 * Earlier announcers keep their place because the others heard them first; the key breaks exact ties.
 */
export function standingDown(installing: readonly { node: string; announcedAt: number }[], slots: number): string[] {
  const ranked = [...installing].sort((a, b) => a.announcedAt - b.announcedAt || byKey(a.node, b.node));
  return ranked.slice(Math.max(0, slots)).map((x) => x.node);
}

/**
 * Running instances that are surplus: the `count - instances` most recently started (ties: the higher node
 * key first). The newest instance holds the least (its data synced last, its clients fewest), and the
 * oldest of a `g:` app is the likeliest primary; never more than the surplus, so never below `instances`.
 * Nodes that do not take part in placement (`fixed`: their operator turned it off, as their running
 * notices say) are never named: they keep what they run, and the surplus is trimmed among the others.
 */
export function surplusNodes(running: readonly { node: string; runningSince: number; fixed?: boolean }[], instances: number): string[] {
  const extra = running.length - instances;
  if (extra <= 0) return [];
  // A node whose operator turned placement off keeps what it runs: the others trim among themselves.
  const ranked = running.filter((r) => !r.fixed).sort((a, b) => b.runningSince - a.runningSince || byKey(b.node, a.node));
  return ranked.slice(0, extra).map((x) => x.node);
}
