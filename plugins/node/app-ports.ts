/**
 * Ports other plugins hold open, the `nodePorts` service (api.ts); the apps plugin holds each installed
 * app's host ports. While a port has an owner it is allowed in and out on the firewall (firewall.ts, nft
 * rules tagged `corenode app <port>`, apart from allowport's own `corenode allow <port>`, so closing an app
 * port never removes the operator's rule) and mapped on the router through UPnP, TCP and UDP; once its last
 * owner lets go, both are removed. The owners are kept in the node's store before anything is changed, so
 * a restarted node opens again what it held and finishes closing what it was closing.
 *
 * Failures are never thrown at the caller (an install must not fail because the router is down): they are
 * logged, shown by `list()`, and tried again at the next round (`refresh`, run with the node's own UPnP
 * round, or on its own timer without UPnP). The ports stay open while the node stops: the apps' containers
 * keep serving without it.
 */
import type { Clock, Collection, Log } from '../../core/plugin-api.ts';
import type { NodePorts, PortState } from './api.ts';
import type { Firewall } from './firewall.ts';
import type { Upnp } from './upnp.ts';

/** What the store keeps of a port: its owners (none while a close is still to be finished). */
export interface HeldPort {
  port: number;
  owners: string[];
}

export const appPortTag = (port: number) => `corenode app ${port}`;
/** The mapping's description on the router, for the operator reading `getmap`: `Core_app_myapp`. */
const description = (owner: string) => `Core_${owner.replace(/[^A-Za-z0-9_.-]/g, '_')}`.slice(0, 64);

export interface AppPortsDeps {
  store: Collection<HeldPort>;
  firewall: Firewall;
  /** null while `node.upnp.enabled` is false: nothing is mapped. */
  upnp: Upnp | null;
  clock: Clock;
  log: Log;
}

export function createAppPorts(d: AppPortsDeps) {
  const { firewall, upnp, log } = d;
  const states = new Map<number, PortState>();
  const fresh = (port: number, owners: string[] = []): PortState => ({
    port,
    owners,
    firewall: firewall.tool === 'none' ? 'skipped' : 'pending',
    upnp: upnp ? 'pending' : 'disabled',
    lastError: null,
  });
  const snapshot = (s: PortState): PortState => ({ ...s, owners: [...s.owners], lastError: s.lastError && { ...s.lastError } });

  const loaded = (async () => {
    try {
      for (const h of await d.store.find({})) states.set(h.port, fresh(h.port, [...h.owners]));
    } catch (e) {
      log.error({ err: (e as Error).message }, 'app ports: the held ports could not be read; they are opened again as their owners ask');
    }
  })();

  // One change of a port at a time (an open and a close of the same port must not interleave), and one
  // firewall change at a time on the node (an nft listing and the add that follows it must see the same chain).
  const locks = new Map<number, Promise<unknown>>();
  function withPort<T>(port: number, fn: () => Promise<T>): Promise<T> {
    const next = (locks.get(port) ?? Promise.resolve()).then(fn, fn);
    const tail = next.catch(() => undefined);
    locks.set(port, tail);
    void tail.then(() => locks.get(port) === tail && locks.delete(port));
    return next;
  }
  let firewallQueue: Promise<unknown> = Promise.resolve();
  function withFirewall<T>(fn: () => Promise<T>): Promise<T> {
    const next = firewallQueue.then(fn, fn);
    firewallQueue = next.catch(() => undefined);
    return next;
  }

  function fail(s: PortState, part: 'firewall' | 'upnp', e: unknown) {
    const message = `${part === 'firewall' ? `firewall (${firewall.tool})` : 'UPnP'}: ${((e as Error).message ?? String(e)).slice(0, 300)}`;
    // The same failure at every round is logged once, at warn; its repeats at debug.
    (s.lastError?.message === message ? log.debug : log.warn).call(log, { port: s.port, owners: s.owners, err: message }, 'app ports: a change failed; tried again at the next round');
    s[part] = 'failed';
    s.lastError = { message, at: d.clock.now() };
  }

  async function save(s: PortState) {
    try {
      await d.store.update({ port: s.port }, { port: s.port, owners: s.owners }, { upsert: true });
    } catch (e) {
      log.error({ port: s.port, err: (e as Error).message }, 'app ports: the owners could not be stored; a restart will not know them');
    }
  }

  /** Firewall and router for a held port, each part not done yet; answers whether both are done. */
  async function ensureOpen(s: PortState): Promise<boolean> {
    let ok = true;
    if (s.firewall !== 'skipped' && s.firewall !== 'open')
      try {
        await withFirewall(() => firewall.allow([{ port: s.port, tag: appPortTag(s.port) }]));
        s.firewall = 'open';
      } catch (e) {
        fail(s, 'firewall', e);
        ok = false;
      }
    if (upnp && s.upnp !== 'mapped')
      try {
        await upnp.map(s.port, ['TCP', 'UDP'], description(s.owners[0]));
        s.upnp = 'mapped';
      } catch (e) {
        fail(s, 'upnp', e);
        ok = false;
      }
    if (ok) s.lastError = null;
    return ok;
  }

  /** Removes the port's rules and mappings; the port is forgotten once both are gone. */
  async function ensureClosed(s: PortState): Promise<void> {
    let ok = true;
    if (s.firewall !== 'skipped' && s.firewall !== 'closed')
      try {
        await withFirewall(() => firewall.remove(s.port, appPortTag(s.port)));
        s.firewall = 'closed';
      } catch (e) {
        fail(s, 'firewall', e);
        ok = false;
      }
    if (upnp && s.upnp !== 'unmapped')
      try {
        await upnp.unmap(s.port, ['TCP', 'UDP']);
        s.upnp = 'unmapped';
      } catch (e) {
        fail(s, 'upnp', e);
        ok = false;
      }
    if (!ok) return;
    s.lastError = null;
    states.delete(s.port);
    try {
      await d.store.remove({ port: s.port });
    } catch (e) {
      log.error({ port: s.port, err: (e as Error).message }, 'app ports: a closed port could not be removed from the store');
    }
    log.info({ port: s.port }, 'app ports: closed');
  }

  function check(port: number, owner: string) {
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new RangeError(`not a port number: ${port}`);
    if (typeof owner !== 'string' || !owner || owner.length > 200) throw new TypeError('an owner is a string of 1 to 200 characters');
  }

  const service: NodePorts = {
    async open(port, owner) {
      check(port, owner);
      await loaded;
      return withPort(port, async () => {
        let s = states.get(port);
        if (!s) states.set(port, (s = fresh(port)));
        if (!s.owners.includes(owner)) {
          s.owners.push(owner);
          await save(s);
        }
        // Done already for another owner (or by this run's first round): nothing to change.
        const done = (s.firewall === 'open' || s.firewall === 'skipped') && (s.upnp === 'mapped' || s.upnp === 'disabled');
        if (!done && (await ensureOpen(s))) log.info({ port, owners: s.owners, firewall: s.firewall, upnp: s.upnp }, 'app ports: opened');
        return snapshot(s);
      });
    },
    async close(port, owner) {
      check(port, owner);
      await loaded;
      return withPort(port, async () => {
        const s = states.get(port);
        if (!s) return { ...fresh(port), firewall: firewall.tool === 'none' ? 'skipped' : 'closed', upnp: upnp ? 'unmapped' : 'disabled' };
        const i = s.owners.indexOf(owner);
        if (i >= 0) {
          s.owners.splice(i, 1);
          await save(s);
        }
        if (!s.owners.length) await ensureClosed(s);
        return snapshot(s);
      });
    },
    list: () => [...states.values()].sort((a, b) => a.port - b.port).map(snapshot),
  };

  let running: Promise<void> | null = null;
  /**
   * One round: the firewall rules of every held port checked (with nft, one listing per chain; rules lost
   * to a flushed ruleset come back), every held port mapped again (a router that restarted has lost them),
   * and the closes that failed tried again. Concurrent calls share the round.
   */
  function refresh(): Promise<void> {
    running ??= (async () => {
      await loaded;
      const failed = new Set<number>();
      if (firewall.tool !== 'none')
        await withFirewall(async () => {
          // ufw has no listing to compare with: only what is not known open is done again.
          const held = [...states.values()].filter((s) => s.owners.length && (firewall.tool === 'nft' || s.firewall !== 'open'));
          if (!held.length) return;
          try {
            const added = await firewall.allow(held.map((s) => ({ port: s.port, tag: appPortTag(s.port) })));
            for (const s of held) s.firewall = 'open';
            if (added) log.info({ rules: added }, 'app ports: firewall rules that were missing added again');
          } catch (e) {
            for (const s of held) {
              fail(s, 'firewall', e);
              failed.add(s.port);
            }
          }
        });
      for (const port of [...states.keys()])
        await withPort(port, async () => {
          const s = states.get(port);
          if (!s) return;
          if (!s.owners.length) return ensureClosed(s);
          if (upnp)
            try {
              await upnp.map(port, ['TCP', 'UDP'], description(s.owners[0]));
              s.upnp = 'mapped';
            } catch (e) {
              fail(s, 'upnp', e);
              failed.add(port);
            }
          if (!failed.has(port) && s.firewall !== 'failed' && s.firewall !== 'pending') s.lastError = null;
        });
    })().finally(() => {
      running = null;
    });
    return running;
  }

  return {
    service,
    refresh,
    /** Rounds of their own, now and every `ms` (a node without UPnP has no round of its own ports to run them). */
    every(ms: number): () => void {
      void refresh();
      const timer = setInterval(() => void refresh(), ms);
      timer.unref();
      return () => clearInterval(timer);
    },
    /** Waits for the round and the changes under way (the ports stay open). */
    async settle(): Promise<void> {
      await running;
      await Promise.all(locks.values());
      await firewallQueue;
    },
  };
}

export type AppPorts = ReturnType<typeof createAppPorts>;
