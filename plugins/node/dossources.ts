/**
 * What raises the DOS counter (facts §4.3), checked in rounds every `dos.intervalSeconds`:
 *
 * - a collision: the node's collateral is confirmed in the daemon's node list at another address than the
 *   one its benchmark reports -> 100;
 * - the benchmark daemon's version is below `dos.benchmarkMinimumVersion` -> +11;
 * - the benchmark answers but cannot tell the node's public IP -> +15.
 *
 * A round where every check that could be made passes resets the counter. A round that cannot ask the
 * benchmark changes nothing: a node without its benchmark is already unfit in /core/health, and a
 * development node must not ban itself (its login phrases would be refused). Not built here: the own
 * availability check through other nodes (+2), IP changes within 20 h (+11) and too few peers (+0.13 a
 * minute) need the peer network (issue 17); the blocked port and repository lists are deleted routes.
 */
import type { DaemonService } from '../daemon/api.ts';
import type { Log } from '../../core/plugin-api.ts';
import type { Benchmark } from './benchmark.ts';
import type { createDos } from './dos.ts';
import type { NodeConfig } from './settings.ts';
import { compareVersions } from './state.ts';

type Dos = ReturnType<typeof createDos>;

export const COLLISION = 100;
export const OLD_BENCHMARK = 11;
export const NO_PUBLIC_IP = 15;

/** `ip` or `ip:port` of a list entry or the benchmark, as `ip:port` (16127 when none is given). */
function withPort(a: string): string {
  return /:\d+$/.test(a) && !a.startsWith('[') ? a : `${a}:16127`;
}

export function createDosRounds(deps: { config: NodeConfig['dos']; dos: Dos; benchmark: Benchmark; daemon: () => DaemonService | undefined; log: Log }) {
  const { config, dos, benchmark, log } = deps;

  /** One round: the reason of the first failing check (after applying it), or null when all passed. */
  async function round(): Promise<string | null> {
    let info: { version?: unknown };
    let bench: { ipaddress?: unknown };
    try {
      info = await benchmark.call<{ version?: unknown }>('getinfo');
      bench = await benchmark.call<{ ipaddress?: unknown }>('getbenchmarks');
    } catch {
      return null; // the benchmark is away: nothing can be judged (see above)
    }
    const version = typeof info?.version === 'string' ? info.version : '';
    if (!version || compareVersions(version, config.benchmarkMinimumVersion) < 0) {
      const why = `Benchmark version ${version || 'unknown'} is below the minimum ${config.benchmarkMinimumVersion}`;
      await dos.add(OLD_BENCHMARK, why);
      return why;
    }
    const own = typeof bench?.ipaddress === 'string' && bench.ipaddress ? withPort(bench.ipaddress) : '';
    if (!own) {
      const why = 'The public IP of the node cannot be obtained from the benchmark';
      await dos.add(NO_PUBLIC_IP, why);
      return why;
    }
    const daemon = deps.daemon();
    if (daemon) {
      try {
        const status = await daemon.call<{ collateral?: unknown }>('getlegacynodestatus', [], { cache: false });
        const m = /COutPoint\(([0-9a-fA-F]{64}),\s*(\d+)\)/.exec(String(status?.collateral ?? ''));
        if (m) {
          const list = await daemon.call<{ txhash?: unknown; outidx?: unknown; ip?: unknown }[]>('viewdeterministiclegacynodelist', [], { cache: false });
          const other = (Array.isArray(list) ? list : []).find(
            (n) => String(n?.txhash ?? '').toLowerCase() === m[1].toLowerCase() && String(n?.outidx ?? '') === m[2] && typeof n?.ip === 'string' && withPort(n.ip) !== own,
          );
          if (other) {
            const why = `Collision: the collateral of this node (${own}) is confirmed at ${String(other.ip)}`;
            const now = await dos.get();
            await dos.add(Math.max(0, COLLISION - now.dosState), why);
            return why;
          }
        }
      } catch {
        // An unregistered node or a daemon that does not answer: no collision can be seen (not a failure).
      }
    }
    await dos.reset();
    return null;
  }

  let running: Promise<unknown> = Promise.resolve();
  const tick = () => {
    running = running.then(round).catch((e) => log.warn({ err: (e as Error).message }, 'DOS round failed'));
  };
  const timer = config.intervalSeconds > 0 ? setInterval(tick, config.intervalSeconds * 1000) : undefined;
  timer?.unref();
  if (timer) tick();
  return {
    round,
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
