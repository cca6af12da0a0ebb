/**
 * Tells the network which apps this node runs: one `apprunning` notice listing them all, sent at start,
 * soon after the apps plugin reports a change (installed, removed, running, stopped), and every
 * `announceMs`; `appremoved` when an app is removed here.
 */
import type { Events, Log } from '../../core/plugin-api.ts';
import type { AppsService } from '../apps/api.ts';

export class Announcer {
  private timer?: ReturnType<typeof setTimeout>;
  private soon?: ReturnType<typeof setTimeout>;
  private offs: (() => void)[] = [];
  private last = '';

  constructor(
    private readonly apps: () => AppsService | undefined,
    private readonly events: Events,
    private readonly notice: (type: string, payload: Record<string, unknown>) => void,
    private readonly everyMs: number,
    private readonly log: Log,
  ) {}

  start() {
    for (const e of ['apps.installed', 'apps.running', 'apps.stopped']) this.offs.push(this.events.on(e, () => this.schedule(false)));
    this.offs.push(
      this.events.on('apps.removed', (ev) => {
        const app = (ev.data as { app?: string })?.app;
        if (app) this.notice('appremoved', { name: app });
        this.schedule(false);
      }),
    );
    this.schedule(true);
  }

  stop() {
    for (const off of this.offs) off();
    clearTimeout(this.timer);
    clearTimeout(this.soon);
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
    if (!apps) return;
    try {
      const list = (await apps.list())
        .filter((a) => a.components.some((c) => c.desired === 'running'))
        .map((a) => ({ name: a.name, hash: a.hash, runningSince: a.installedAt }));
      const key = JSON.stringify(list);
      // An unchanged list is sent only on the periodic refresh (which keeps the locations from expiring).
      if (!force && key === this.last) return;
      this.last = key;
      this.notice('apprunning', { apps: list });
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'peers: could not list the apps to announce');
    }
  }
}
