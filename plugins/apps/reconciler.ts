/**
 * Keeps every installed component in its desired state: a component that should run and does not is
 * started (a vanished container is made again from the installed spec), after the reference's crash
 * back-off ladder (0 s, 30 s, 5 min, 15 min, 30 min; 10 min of stable run resets it). On a node restart it
 * adopts the containers it finds by label: nothing is recreated that still exists. It never removes an
 * app: a failure is retried at the next rung.
 */
import { PeriodicWork } from './periodic.ts';
import type { Engine } from './engine.ts';
import type { InstalledComponent, Installer, InstalledApp } from './installer.ts';
import { normalise } from './spec.ts';

export const LADDER_MS = [0, 30_000, 300_000, 900_000, 1_800_000];
export const STABLE_MS = 600_000;

/** Consulted before a component is started again: false keeps it down (the guard's resource checks). */
export interface ReconcilerHooks {
  beforeStart(rec: InstalledApp, comp: InstalledComponent, exists: boolean): Promise<boolean>;
}

interface Track {
  attempts: number;
  lastAttempt: number;
  runningSince: number | null;
}

export class Reconciler extends PeriodicWork {
  private readonly tracks = new Map<string, Track>();
  readonly stats = { ticks: 0, starts: 0, recreated: 0, adopted: 0, failures: 0 };
  lastError: string | null = null;

  constructor(
    private readonly engine: Engine,
    private readonly installer: Installer,
    private readonly now: () => number,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
    private readonly hooks?: ReconcilerHooks,
  ) {
    super();
  }

  /** Mount the volumes of installed apps and count the containers found (the first look after a start). */
  async adopt(): Promise<number> {
    const found = new Set((await this.engine.listManaged()).map((c) => c.Names[0].slice(1)));
    const known = new Set<string>();
    let adopted = 0;
    for (const rec of await this.installer.store.find({})) {
      for (const c of rec.components) {
        known.add(c.container);
        if (this.engine.volumes.exists(c.container)) await this.engine.volumes.mount(c.container).catch((e) => this.log.warn({ err: e.message, container: c.container }, 'apps: mounting a volume failed'));
        if (found.has(c.container)) adopted++;
      }
    }
    // Labelled but not installed: an install the node did not finish (it stopped mid-way). Left alone, never
    // removed unasked; `appremove` clears them.
    const orphans = [...found].filter((n) => !known.has(n));
    if (orphans.length) this.log.warn({ containers: orphans }, 'apps: containers with the node\'s labels but no installed app (an interrupted install?); appremove removes them');
    this.stats.adopted = adopted;
    return adopted;
  }

  protected roundFailed(e: Error): void {
    this.lastError = e.message;
    this.log.warn({ err: this.lastError }, 'apps: reconciling failed; retrying');
  }

  private due(t: Track, now: number): boolean {
    return now - t.lastAttempt >= LADDER_MS[Math.min(t.attempts, LADDER_MS.length - 1)];
  }

  protected async round(): Promise<void> {
    this.stats.ticks++;
    // An install, removal or redeploy owns its app's containers until it ends.
    if (this.installer.busy) return;
    const now = this.now();
    const byName = new Map((await this.engine.listManaged()).map((c) => [c.Names[0].slice(1), c]));
    const records: InstalledApp[] = await this.installer.store.find({});
    const seen = new Set<string>();
    for (const rec of records) {
      for (const comp of rec.components) {
        seen.add(comp.container);
        const t = this.tracks.get(comp.container) ?? { attempts: 0, lastAttempt: -Infinity, runningSince: null };
        this.tracks.set(comp.container, t);
        const c = byName.get(comp.container);
        if (c?.State === 'running') {
          t.runningSince ??= now;
          if (t.attempts && now - t.runningSince >= STABLE_MS) t.attempts = 0;
          continue;
        }
        t.runningSince = null;
        if (comp.desired !== 'running' || !this.due(t, now)) continue;
        // Under the app's lock, on its record as it is now: a lifecycle verb may have stopped it since the
        // round read the records.
        await this.installer.withApp(rec.name, async () => {
          const fresh = (await this.installer.installed(rec.name))?.components.find((x) => x.container === comp.container);
          if (fresh?.desired !== 'running') return;
          if (this.hooks && !(await this.hooks.beforeStart(rec, comp, !!c).catch(() => true))) return;
          t.attempts++;
          t.lastAttempt = now;
          try {
            if (!c) {
              await this.recreate(rec, comp.name);
              this.stats.recreated++;
            } else {
              // 304: started meanwhile by someone else (file sync starting an elected standby), not a failure.
              await this.engine.start(comp.container).catch((e) => {
                if ((e as { statusCode?: number })?.statusCode !== 304) throw e;
              });
            }
            this.stats.starts++;
            this.log.info({ container: comp.container, attempt: t.attempts }, 'apps: component was not running; started');
          } catch (e) {
            this.stats.failures++;
            this.log.warn({ container: comp.container, attempt: t.attempts, err: (e as Error).message }, 'apps: starting a component failed; next try after the back-off');
          }
        });
      }
    }
    for (const k of this.tracks.keys()) if (!seen.has(k)) this.tracks.delete(k);
  }

  /** A container of an installed app vanished: make it again from the installed spec (data volume kept). */
  private async recreate(rec: InstalledApp, component: string): Promise<void> {
    const spec = normalise(rec.appSpecification);
    const i = spec.components.findIndex((c) => c.name === component);
    const comp = rec.components.find((c) => c.name === component)!;
    await this.engine.ensureNetwork(rec.name);
    if (!(await this.engine.hasImage(spec.components[i].repotag))) await this.engine.pull(spec.components[i].repotag, spec.components[i].repoauth, () => {});
    await this.engine.volumes.create(comp.container, spec.components[i].hdd);
    await this.engine.createContainer(rec.name, spec, i, rec.hash);
    await this.engine.start(comp.container);
  }
}
