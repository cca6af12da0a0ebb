/**
 * What raises the DOS counter (facts §4.3), checked in rounds every `dos.intervalSeconds`:
 *
 * - a collision: the node's collateral is confirmed in the daemon's node list at another address than the
 *   one its benchmark reports -> 100;
 * - the benchmark daemon's version is below `dos.benchmarkMinimumVersion` -> +11;
 * - the benchmark answers but cannot tell the node's public IP -> +15;
 * - the public IP (the benchmark's) changed more than once within 20 h -> +11 at the change; the rounds
 *   after it fail without adding while the 20 h still hold two changes (no reset: the node stays banned);
 * - its peers answer that they cannot reach the node's API at that IP -> +2 a round (dospeers.ts);
 * - fewer peers than `peers.minimums` -> +0.13 a minute (dospeers.ts).
 *
 * Every failing check of a round adds its amount (`dosMessage` names each); a round where every check that
 * could be made passes resets the counter. A round that cannot ask the benchmark changes nothing: a node
 * without its benchmark is already unfit in /core/health, and a development node must not ban itself (its
 * login phrases would be refused). Without the peers plugin the two peer checks are not made. The blocked
 * port and repository lists of the reference are deleted routes here.
 */
import type { DaemonService } from '../daemon/api.ts';
import type { PeerNetwork } from '../peers/api.ts';
import type { Clock, Collection, Events, Log } from '../../core/plugin-api.ts';
import type { Benchmark } from './benchmark.ts';
import type { createDos } from './dos.ts';
import { IP_CHANGES, NOT_REACHABLE, askPeers, fewPeersMeter, ipHistory, type Failure } from './dospeers.ts';
import type { NodeConfig } from './settings.ts';
import { compareVersions } from './state.ts';

type Dos = ReturnType<typeof createDos>;

export const COLLISION = 100;
export const OLD_BENCHMARK = 11;
export const NO_PUBLIC_IP = 15;

const hasPort = (a: string) => /:\d+$/.test(a) && !a.startsWith('[');
/** `ip` or `ip:port` of a list entry or the benchmark, as `ip:port` (16127 when none is given). */
function withPort(a: string): string {
  return hasPort(a) ? a : `${a}:16127`;
}

export interface DosRoundDeps {
  config: NodeConfig['dos'];
  /** The node's API port: where peers reach it when the benchmark's address names no port. */
  apiPort: number;
  /** How long a peer may take to probe this node (`availability.timeoutMs`). */
  availabilityTimeoutMs: number;
  dos: Dos;
  benchmark: Benchmark;
  daemon: () => DaemonService | undefined;
  peers: () => PeerNetwork | undefined;
  /** The node's state store (the public IP's history). */
  store: Collection;
  clock: Clock;
  events: Events;
  log: Log;
}

export function createDosRounds(deps: DosRoundDeps) {
  const { config, dos, benchmark, log } = deps;
  const fewPeers = fewPeersMeter(deps.clock);
  const ips = ipHistory(deps.store, deps.clock);
  const stopping = new AbortController();

  /** A collision (see above): the address the list confirms this node's collateral at, if not `own`. */
  async function collision(own: string): Promise<string | null> {
    const daemon = deps.daemon();
    if (!daemon) return null;
    try {
      const status = await daemon.call<{ collateral?: unknown }>('getlegacynodestatus', [], { cache: false });
      const m = /COutPoint\(([0-9a-fA-F]{64}),\s*(\d+)\)/.exec(String(status?.collateral ?? ''));
      if (!m) return null;
      const list = await daemon.call<{ txhash?: unknown; outidx?: unknown; ip?: unknown }[]>('viewdeterministiclegacynodelist', [], { cache: false });
      const other = (Array.isArray(list) ? list : []).find(
        (n) => String(n?.txhash ?? '').toLowerCase() === m[1].toLowerCase() && String(n?.outidx ?? '') === m[2] && typeof n?.ip === 'string' && withPort(n.ip) !== own,
      );
      return other ? String(other.ip) : null;
    } catch {
      return null; // an unregistered node or a daemon that does not answer: no collision can be seen (not a failure)
    }
  }

  /** One round: the reasons of the failing checks (after applying them), or null when all passed. */
  async function round(): Promise<string | null> {
    let info: { version?: unknown };
    let bench: { ipaddress?: unknown };
    try {
      info = await benchmark.call<{ version?: unknown }>('getinfo');
      bench = await benchmark.call<{ ipaddress?: unknown }>('getbenchmarks');
    } catch {
      fewPeers.pause();
      return null; // the benchmark is away: nothing can be judged (see above)
    }
    const fails: Failure[] = [];
    const version = typeof info?.version === 'string' ? info.version : '';
    if (!version || compareVersions(version, config.benchmarkMinimumVersion) < 0)
      fails.push({ amount: OLD_BENCHMARK, why: `Benchmark version ${version || 'unknown'} is below the minimum ${config.benchmarkMinimumVersion}` });
    const own = typeof bench?.ipaddress === 'string' && bench.ipaddress ? withPort(bench.ipaddress) : '';
    const peers = deps.peers();
    if (!own) fails.push({ amount: NO_PUBLIC_IP, why: 'The public IP of the node cannot be obtained from the benchmark' });
    else {
      const elsewhere = await collision(own);
      if (elsewhere) {
        const why = `Collision: the collateral of this node (${own}) is confirmed at ${elsewhere}`;
        const now = await dos.get();
        await dos.add(Math.max(0, COLLISION - now.dosState), why);
        return why;
      }
      const ip = own.slice(0, own.lastIndexOf(':'));
      // The benchmark names the port when it is not the default; without one the node is where it listens.
      const port = hasPort(String(bench.ipaddress)) ? Number(own.slice(own.lastIndexOf(':') + 1)) : deps.apiPort;
      const seen = await ips.observe(ip);
      if (seen.from !== undefined) {
        deps.events.emit('node:ipchanged', { from: seen.from, to: ip, changesWithin20h: seen.changes });
        log.warn({ from: seen.from, to: ip, changes: seen.changes }, 'the public IP of the node changed');
      }
      if (seen.changes > 1)
        fails.push({ amount: seen.from !== undefined ? IP_CHANGES : 0, why: `The public IP of the node changed ${seen.changes} times within 20 h (now ${ip})` });
      if (peers) {
        const v = await askPeers(peers.links(), { ip, port }, { ask: config.availabilityPeers, timeoutMs: deps.availabilityTimeoutMs, signal: stopping.signal });
        if (v.verdict === 'unavailable') fails.push({ amount: NOT_REACHABLE, why: v.detail });
      }
    }
    const few = peers ? fewPeers.judge(peers.shortfalls()) : (fewPeers.pause(), null);
    if (few) fails.push(few);
    if (!fails.length) {
      await dos.reset();
      return null;
    }
    const why = fails.map((f) => f.why).join('; ');
    const amount = fails.reduce((a, f) => a + f.amount, 0);
    // Nothing to add yet (the first minutes without peers, a ban held): the reason is still shown, once.
    if (amount > 0 || !(await dos.get()).dosMessage?.endsWith(why)) await dos.add(amount, why);
    return why;
  }

  // A round that outlasts the interval (peers asked in turn, each given up to twice availability.timeoutMs)
  // makes the next tick a no-op rather than a queue of rounds.
  let running: Promise<unknown> | undefined;
  const tick = () => {
    running ??= round()
      .catch((e) => log.warn({ err: (e as Error).message }, 'DOS round failed'))
      .finally(() => (running = undefined));
  };
  const timer = config.intervalSeconds > 0 ? setInterval(tick, config.intervalSeconds * 1000) : undefined;
  timer?.unref();
  if (timer) tick();
  return {
    round,
    async stop() {
      if (timer) clearInterval(timer);
      stopping.abort(); // a peer being asked is not waited for
      await running;
    },
  };
}
