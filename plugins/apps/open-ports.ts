/**
 * The host ports of the apps installed here, held open through the node plugin's `nodePorts` service
 * (firewall and UPnP router; plugins/node/api.ts) under the owner `app:<name>`: opened when an app is
 * installed, closed when it is removed (whatever removed it), changed when an update changes them. The
 * service decides what is done and retries what failed; this side only says which app holds which port.
 *
 * Each pass compares the installed records with what the service lists for `app:` owners, so one pass
 * covers every way an app comes and goes: one runs for the app at its events (`apps.installed`,
 * `apps.removed`, `apps.redeployed`), one over every app at start and then every minute. The periodic pass
 * catches events this side did not see: an optional dependency orders no set-up, so the node plugin may
 * come up after this one, or be disabled and enabled again while apps come and go.
 */
import type { Events, Log } from '../../core/plugin-api.ts';
import type { NodePorts } from '../node/api.ts';
import { normalise } from './spec.ts';

const OWNER = 'app:';
/** Cheap (a store read and an in-memory list): often enough that an app's ports follow soon after a missed event. */
const PASS_MS = 60_000;
/** At start, how often and how long the node plugin's service is waited for (later, the periodic pass). */
const WAIT_MS = 1000;
const WAIT_TRIES = 120;

/** The host ports an app's components publish. */
export function hostPorts(spec: Record<string, any>): number[] {
  return [...new Set(normalise(spec).components.flatMap((c) => c.ports ?? []))].filter((p) => Number.isInteger(p) && p > 0 && p < 65536);
}

export interface OpenPortsDeps {
  /** Looked up at each use: the node plugin may be set up later, or disabled. */
  nodePorts: () => NodePorts | undefined;
  installed: () => Promise<{ name: string; appSpecification: Record<string, any> }[]>;
  events: Events;
  log: Log;
}

export function openAppPorts(d: OpenPortsDeps): { stop(): void } {
  // One pass at a time: an install's open and a removal's close of the same app must not interleave.
  let queue: Promise<unknown> = Promise.resolve();
  const serial = (fn: () => Promise<void>) => {
    queue = queue.then(fn).catch((e) => d.log.warn({ err: (e as Error).message }, 'apps: opening or closing app ports failed; tried again at the next pass'));
    return queue;
  };

  /** Make the service's `app:` owners match the installed apps (`only`: one app). Answers false without the service. */
  async function pass(only?: string): Promise<boolean> {
    const ports = d.nodePorts();
    if (!ports) return false;
    const want = new Map<string, number[]>();
    const skip = new Set<string>();
    for (const rec of await d.installed()) {
      if (only && rec.name !== only) continue;
      try {
        want.set(`${OWNER}${rec.name}`, hostPorts(rec.appSpecification));
      } catch (e) {
        // Its ports unknown: what it holds is left as it is (no entry in `want` would close them).
        d.log.warn({ app: rec.name, err: (e as Error).message }, 'apps: the ports of an installed app cannot be read');
        want.set(`${OWNER}${rec.name}`, []);
        skip.add(`${OWNER}${rec.name}`);
      }
    }
    const held = new Map<string, number[]>();
    for (const p of ports.list())
      for (const o of p.owners) if (o.startsWith(OWNER) && (!only || o === `${OWNER}${only}`)) held.set(o, [...(held.get(o) ?? []), p.port]);
    // Only what is missing is asked for: a port held but failing is the service's to retry, at its round.
    for (const [owner, list] of want)
      for (const port of list) if (!held.get(owner)?.includes(port)) await ports.open(port, owner);
    for (const [owner, list] of held) {
      if (skip.has(owner)) continue;
      for (const port of list) if (!want.get(owner)?.includes(port)) await ports.close(port, owner);
    }
    return true;
  }

  const offs = ['apps.installed', 'apps.removed', 'apps.redeployed'].map((name) =>
    d.events.on(name, (ev) => {
      const app = (ev.data as { app?: unknown })?.app;
      if (typeof app === 'string' && app) void serial(async () => void (await pass(app)));
    }),
  );

  let startTimer: ReturnType<typeof setInterval> | undefined;
  void serial(async () => {
    if (await pass()) return;
    let tries = 0;
    startTimer = setInterval(() => {
      if (!d.nodePorts() && ++tries < WAIT_TRIES) return;
      clearInterval(startTimer);
      void serial(async () => void (await pass()));
    }, WAIT_MS);
    startTimer.unref();
  });
  const timer = setInterval(() => void serial(async () => void (await pass())), PASS_MS);
  timer.unref();

  return {
    stop() {
      for (const off of offs) off();
      clearInterval(startTimer);
      clearInterval(timer);
    },
  };
}
