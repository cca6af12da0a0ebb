/**
 * The guard: every `intervalMs` it looks at each installed component and
 * - records tampering (tampering.ts): the image the container runs, or the image its tag now names, is not
 *   the one the tag resolved to when the node first ran it; the container vanished; the volume file or its
 *   mount is gone (or a bind is missing from the container); the container left its app network;
 * - announces state changes on the node's event bus (`apps.running`, `apps.stopped`);
 * - applies the resource checks over the last hour: a component OOM-killed `oomKillsPerHour` times, or
 *   whose CPU sat at `cpuOfLimit` of its nanoCpus in at least `cpuSamples` samples of the hour, is stopped
 *   (desired `stopped`, so the reconciler leaves it) with the reason recorded on its installed record. It
 *   is never removed; `appstart` clears the reason.
 * It pauses while an install, removal or redeploy runs (they own the app's containers then).
 */
import { PeriodicWork } from './periodic.ts';
import fs from 'node:fs';
import type { Engine } from './engine.ts';
import type { InstalledApp, InstalledComponent, Installer } from './installer.ts';
import type { Monitor } from './monitor.ts';
import { networkName } from './names.ts';
import { normalise } from './spec.ts';
import type { TamperingKind, TamperingLog } from './tampering.ts';

export interface AbuseRules {
  oomKillsPerHour: number;
  cpuOfLimit: number;
  cpuSamples: number;
}

export type Emit = (name: string, data: Record<string, unknown>) => void;

export class Guard extends PeriodicWork {
  /** Last seen state per container ('running', 'exited', 'missing'). */
  private readonly states = new Map<string, string>();
  /** OOM kills seen per container: the FinishedAt of each, to count a kill once. */
  private readonly ooms = new Map<string, number[]>();
  private readonly lastOomFinish = new Map<string, string>();
  readonly stats = { ticks: 0, tampering: 0, stopped: 0 };

  constructor(
    private readonly engine: Engine,
    private readonly installer: Installer,
    private readonly tampering: TamperingLog,
    private readonly monitor: Monitor,
    private readonly rules: AbuseRules,
    private readonly emit: Emit,
    private readonly now: () => number,
    private readonly log: { warn(o: object, m: string): void; info(o: object, m: string): void },
  ) {
    super();
  }

  protected roundFailed(e: Error): void {
    this.log.warn({ err: e.message }, 'apps: guard round failed');
  }

  /** A sighting of tampering: recorded, and announced once per (app, kind, hour). */
  async report(rec: InstalledApp, comp: InstalledComponent, kind: TamperingKind, detail: string): Promise<void> {
    const fresh = await this.tampering.record({ app: rec.name, kind, component: comp.name, container: comp.container, detail, appHash: rec.hash, owner: rec.owner });
    this.stats.tampering++;
    if (fresh) {
      this.log.warn({ app: rec.name, container: comp.container, kind, detail }, 'apps: tampering');
      this.emit('apps.tampering', { app: rec.name, component: comp.name, kind, detail });
    }
  }

  protected async round(): Promise<void> {
    this.stats.ticks++;
    if (this.installer.busy) return;
    const byName = new Map((await this.engine.listManaged()).map((c) => [c.Names[0].slice(1), c]));
    const mounts = new Set(fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').map((l) => l.split(' ')[1]?.replace(/\\040/g, ' ')));
    for (const rec of await this.installer.store.find({})) {
      const spec = normalise(rec.appSpecification);
      for (const [i, comp] of rec.components.entries()) {
        const c = byName.get(comp.container);
        const state = c ? c.State : 'missing';
        const before = this.states.get(comp.container);
        this.states.set(comp.container, state);
        if (before !== undefined && before !== state) {
          if (state === 'running') this.emit('apps.running', { app: rec.name, component: comp.name, container: comp.container });
          else if (before === 'running') this.emit('apps.stopped', { app: rec.name, component: comp.name, container: comp.container, state });
        }
        if (!c) {
          // The reconciler reports a vanished container it recreates (it may come first); this catches the rest.
          if (before !== undefined && before !== 'missing') await this.report(rec, comp, 'container_vanished', `container ${comp.container} is gone`);
          continue;
        }
        const sc = spec.components[i];
        if (!this.engine.volumes.exists(comp.container)) await this.report(rec, comp, 'volume_missing', `volume file of ${comp.container} is gone`);
        else if (!mounts.has(this.engine.volumes.mountpoint(comp.container))) await this.report(rec, comp, 'mount_vanished', `volume of ${comp.container} is not mounted`);
        const info = await this.engine.container(comp.container).inspect().catch(() => null);
        if (!info) continue;
        const binds = new Set((info.HostConfig?.Binds ?? []).map((b: string) => b.split(':')[0]));
        const present = new Set((info.Mounts ?? []).map((m: any) => m.Source));
        const lost = [...binds].filter((b) => !present.has(b));
        if (lost.length) await this.report(rec, comp, 'mount_vanished', `mounts of ${comp.container} missing: ${lost.join(', ')}`);
        if (info.State?.Running && !info.NetworkSettings?.Networks?.[networkName(rec.name)]) await this.report(rec, comp, 'network_detached', `${comp.container} is not attached to ${networkName(rec.name)}`);
        await this.checkImage(rec, comp, sc.repotag, info.Image);
        await this.checkAbuse(rec, comp, info);
      }
    }
  }

  private async checkImage(rec: InstalledApp, comp: InstalledComponent, repotag: string, running: string): Promise<void> {
    if (!comp.imageId) {
      // First sight: the image the tag resolved to at install (the install pulled it just before).
      comp.imageId = running;
      await this.installer.store.update({ name: rec.name }, { $set: { components: rec.components } });
      return;
    }
    if (running !== comp.imageId) return this.report(rec, comp, 'image_digest_changed', `${comp.container} runs ${running}, installed ${repotag} was ${comp.imageId}`);
    const tagged = await this.engine.docker
      .getImage(repotag)
      .inspect()
      .then((i) => i.Id)
      .catch(() => null);
    if (tagged && tagged !== comp.imageId) await this.report(rec, comp, 'image_digest_changed', `${repotag} now names ${tagged}, installed as ${comp.imageId}`);
  }

  /** The reconciler is about to start a component that is not running: count what happened to it first. */
  async beforeStart(rec: InstalledApp, comp: InstalledComponent, exists: boolean): Promise<boolean> {
    if (!exists) {
      await this.report(rec, comp, 'container_vanished', `container ${comp.container} is gone; recreated from the installed spec`);
      this.states.set(comp.container, 'missing');
      return true;
    }
    const info = await this.engine.container(comp.container).inspect();
    return !(await this.checkAbuse(rec, comp, info));
  }

  /** Answers true when it stopped the component. */
  private async checkAbuse(rec: InstalledApp, comp: InstalledComponent, info: any): Promise<boolean> {
    if (comp.desired !== 'running') return false;
    const now = this.now();
    const kills = (this.ooms.get(comp.container) ?? []).filter((t) => now - t < 3600_000);
    const finished = String(info.State?.FinishedAt ?? '');
    if (info.State?.OOMKilled && this.lastOomFinish.get(comp.container) !== finished) {
      this.lastOomFinish.set(comp.container, finished);
      kills.push(now);
    }
    this.ooms.set(comp.container, kills);
    let reason: string | null = null;
    if (kills.length >= this.rules.oomKillsPerHour) reason = `over its memory limit: killed for memory ${kills.length} times in the last hour (limit ${this.rules.oomKillsPerHour})`;
    else {
      const hour = this.monitor.history(comp.container, 3600_000);
      const hot = hour.filter((s) => s.data.cpuOfLimit !== null && s.data.cpuOfLimit >= this.rules.cpuOfLimit).length;
      if (hot >= this.rules.cpuSamples) reason = `over its CPU limit: at ${Math.round(this.rules.cpuOfLimit * 100)}% of its nanoCpus in ${hot} samples of the last hour (limit ${this.rules.cpuSamples})`;
    }
    if (!reason) return false;
    comp.desired = 'stopped';
    comp.stoppedReason = reason;
    comp.stoppedAt = now;
    await this.installer.store.update({ name: rec.name }, { $set: { components: rec.components } });
    await this.engine.container(comp.container).stop({ t: 10 }).catch(() => {});
    this.ooms.delete(comp.container);
    this.stats.stopped++;
    this.log.warn({ app: rec.name, container: comp.container, reason }, 'apps: component stopped by the resource checks');
    this.emit('apps.stopped', { app: rec.name, component: comp.name, container: comp.container, reason });
    return true;
  }
}
