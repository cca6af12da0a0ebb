/**
 * Keeps the installed apps in step with the registry: an app whose global specification changed (a paid
 * update) is redeployed here, soft or hard as `Installer.update` decides; an app whose `expire` ran out
 * (its last paid message's height plus `expire` blocks, against the height the explorer scanned) is no
 * longer global and is removed. An app that is merely not global now (a reorganisation dropped its payment)
 * is left alone: nothing is removed on one transient state.
 */
import { PeriodicWork } from './periodic.ts';
import type { Installer } from './installer.ts';
import type { Registry } from './registry.ts';
import type { PolicyHolder } from './policy.ts';
import { checkSpecification, type RuleContext } from './spec-rules.ts';

/** After a failed update the same hash is tried again only after this long. */
const RETRY_MS = 5 * 60_000;

export class Updater extends PeriodicWork {
  private readonly failed = new Map<string, { hash: string; at: number }>();

  constructor(
    private readonly o: {
      registry: Registry;
      installer: Installer;
      policy: PolicyHolder;
      rules: () => RuleContext;
      now: () => number;
      emit: (name: string, data: Record<string, unknown>) => void;
      forget: (container: string) => void;
      log: { warn(o: object, m: string): void; info(o: object, m: string): void };
    },
  ) {
    super();
  }

  protected roundFailed(e: Error): void {
    this.o.log.warn({ err: e.message }, 'apps: keeping installed apps up to date failed; retrying');
  }

  protected async round(): Promise<void> {
    const { registry, installer } = this.o;
    for (const rec of await installer.store.find({})) {
      const lines: Record<string, unknown>[] = [];
      const progress = (l: Record<string, unknown>) => void lines.push(l);
      if (await registry.expiredSpec(rec.name)) {
        // Checked again right before taking the slot: an owner's install may have taken it meanwhile.
        if (installer.busy) return;
        const release = installer.acquire(`remove ${rec.name} (expired)`, rec.name);
        try {
          // The record read before the slot was taken may be gone (an owner's appremove).
          if (!(await installer.installed(rec.name))) continue;
          await installer.remove(rec.name, true, progress);
          for (const c of rec.components) this.o.forget(c.container);
        } finally {
          release();
        }
        this.o.log.info({ app: rec.name }, 'apps: the app expired (its expire blocks ran out); removed from this node');
        this.o.emit('apps.removed', { app: rec.name, reason: 'expired' });
        continue;
      }
      const g = await registry.spec(rec.name);
      // Not global now, the same spec, or one this node already had and the registry went back from.
      if (!g || g.hash === rec.hash || g.hashes.indexOf(rec.hash) > g.hashes.indexOf(g.hash)) continue;
      // Images are checked against the policy: without one the update waits (as installs answer 503).
      if (!this.o.policy.held) continue;
      const last = this.failed.get(rec.name);
      if (last && last.hash === g.hash && this.o.now() - last.at < RETRY_MS) continue;
      if (installer.busy) return;
      const release = installer.acquire(`update ${rec.name}`, rec.name);
      try {
        const now = await installer.installed(rec.name);
        if (!now || now.hash !== rec.hash) continue;
        const spec = checkSpecification(g.appSpecification, this.o.rules());
        const mode = await installer.update(now, spec, g.hash, progress);
        this.failed.delete(rec.name);
        this.o.log.info({ app: rec.name, hash: g.hash, mode }, 'apps: redeployed to the updated specification');
        this.o.emit('apps.redeployed', { app: rec.name, hash: g.hash, mode });
      } catch (e) {
        this.failed.set(rec.name, { hash: g.hash, at: this.o.now() });
        this.o.log.warn({ app: rec.name, hash: g.hash, err: (e as Error).message, steps: lines.slice(-5) }, 'apps: redeploy to the updated specification failed; tried again later');
      } finally {
        release();
      }
    }
  }
}
