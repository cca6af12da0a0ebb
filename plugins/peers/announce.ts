/**
 * Tells the network which apps this node runs: one `apprunning` notice listing them all, sent at start,
 * soon after the apps plugin reports a change (installed, removed, running, stopped), and every
 * `announceMs`; `appremoved` when an app is removed here, or when the placement loop stands down from an
 * install it announced; `appinstalling` (with the first announcement time the loop gives) and
 * `appinstallingerror` as installs start and fail.
 */
import type { Events, Log } from '../../core/plugin-api.ts';
import type { AppsService } from '../apps/api.ts';

export class Announcer {
  private timer?: ReturnType<typeof setTimeout>;
  private soon?: ReturnType<typeof setTimeout>;
  private offs: (() => void)[] = [];
  private last = '';
  private waitApps?: ReturnType<typeof setInterval>;

  constructor(
    private readonly apps: () => AppsService | undefined,
    private readonly events: Events,
    private readonly notice: (type: string, payload: Record<string, unknown>) => void,
    private readonly everyMs: number,
    private readonly log: Log,
  ) {}

  start() {
    for (const e of ['apps.installed', 'apps.running', 'apps.stopped']) this.offs.push(this.events.on(e, () => this.schedule(false)));
    // The place says whether the node takes part in placement: the others must hear a change at once.
    this.offs.push(this.events.on('apps.placementlimits', () => this.schedule(true)));
    this.offs.push(
      this.events.on('apps.removed', (ev) => {
        const app = (ev.data as { app?: string })?.app;
        if (app) this.notice('appremoved', { name: app });
        this.schedule(false);
      }),
    );
    this.offs.push(
      this.events.on('apps.installing', (ev) => {
        const d = ev.data as { app?: string; announcedAt?: number };
        if (d?.app) this.notice('appinstalling', { name: d.app, ...(typeof d.announcedAt === 'number' ? { announcedAt: d.announcedAt } : {}) });
      }),
      this.events.on('apps.standdown', (ev) => {
        const app = (ev.data as { app?: string })?.app;
        if (app) this.notice('appremoved', { name: app });
      }),
      this.events.on('apps.installfailed', (ev) => {
        const d = ev.data as { app?: string; error?: string };
        if (d?.app) this.notice('appinstallingerror', { name: d.app, error: String(d.error ?? '').slice(0, 500) });
      }),
    );
    this.schedule(true);
    // The apps plugin may be set up after this one (an optional dependency orders nothing): announce again
    // once it is there, so the first notice lists its apps and the node's place.
    if (!this.apps()) {
      let tries = 0;
      this.waitApps = setInterval(() => {
        if (this.apps() || ++tries > 120) {
          clearInterval(this.waitApps);
          if (this.apps()) this.schedule(true);
        }
      }, 500);
      this.waitApps.unref();
    }
  }

  stop() {
    for (const off of this.offs) off();
    clearTimeout(this.timer);
    clearTimeout(this.soon);
    clearInterval(this.waitApps);
  }

  /** Announce within a second (changes come in bursts: one notice for the burst). */
  private schedule(force: boolean) {
    if (this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      void this.announce(force);
    }, 500);
    this.soon.unref();
  }

  async announce(force: boolean) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.announce(true), this.everyMs);
    this.timer.unref();
    const apps = this.apps();
    try {
      // Without the apps plugin the node still announces itself (no apps, no place).
      const list = (apps ? await apps.list() : [])
        // A `g:` app counts wherever it is installed: its standbys keep the container stopped by design and
        // still hold its data (file sync shares with them and elects among them).
        .filter((a) => a.components.some((c) => c.desired === 'running' || /^[a-z]*g[a-z]*:\//.test((c.containerData ?? '').split('|')[0].trim())))
        .map((a) => ({ name: a.name, hash: a.hash, runningSince: a.installedAt }));
      const key = JSON.stringify(list);
      // (the place's free resources change with the apps, so the list is the key)
      // An unchanged list is sent only on the periodic refresh (which keeps the locations from expiring).
      if (!force && key === this.last) return;
      this.last = key;
      // The node's place rides along for the other nodes' /apps/placementlocations.
      const place = apps ? await apps.place().catch(() => null) : null;
      this.notice('apprunning', { apps: list, place });
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'peers: could not list the apps to announce');
    }
  }
}
