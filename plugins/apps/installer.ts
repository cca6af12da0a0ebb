/**
 * Installing, removing and redeploying apps on this node, one at a time. An install runs named steps
 * (check; then network, pull and volume at once; create; start in compose order) and records an undo for
 * everything it makes; a failure runs the undos in reverse, so nothing is left behind, and says which
 * step failed.
 */
import { ApiError, type Collection } from '../../core/plugin-api.ts';
import { Engine, describeDockerError, ignore404, type Progress } from './engine.ts';
import { containerName } from './names.ts';
import type { PolicyHolder } from './policy.ts';
import { normalise, type AppSpec } from './spec.ts';

export interface InstalledComponent {
  name: string;
  container: string;
  /** Running unless an owner or operator stopped it; the reconciler keeps it so. */
  desired: 'running' | 'stopped';
  /** The image id the component's tag resolved to when the node first ran it (tampering checks). */
  imageId?: string;
  /** Why the resource checks stopped it (cleared by a start). */
  stoppedReason?: string;
  stoppedAt?: number;
}

export interface InstalledApp {
  _id?: string;
  name: string;
  owner: string;
  hash: string;
  version: number;
  appSpecification: Record<string, any>;
  installedAt: number;
  components: InstalledComponent[];
}

export class StepError extends Error {
  constructor(
    readonly step: string,
    readonly component: string | undefined,
    cause: string,
  ) {
    super(cause);
  }
}

export class Installer {
  /** What runs now ('install app', 'remove app', ...), or null. */
  busy: string | null = null;
  busyApp: string | null = null;
  /** Apps being installed now (by the slot's work or a test install) and the host ports they take. */
  private readonly making = new Map<string, { what: string; ports: number[] }>();

  constructor(
    private readonly engine: Engine,
    readonly store: Collection<InstalledApp>,
    private readonly policy: PolicyHolder,
    private readonly now: () => number,
  ) {}

  /** Take the single slot for install, removal and redeploy, or refuse at once. */
  acquire(what: string, app: string): () => void {
    if (this.busy) throw new ApiError(409, 'Busy', `Another installation, removal or redeploy is running (${this.busy}); try again when it ends`);
    this.busy = what;
    this.busyApp = app;
    return () => {
      this.busy = null;
      this.busyApp = null;
    };
  }

  async installed(name: string): Promise<InstalledApp | null> {
    return this.store.findOne({ name });
  }

  /**
   * Install `spec`. Test installs run beside the slot's work (one per owner, test-installs.ts), so what an
   * install is making (its app name and host ports) is claimed here until it ends, and a second install of
   * the same name or port at once is refused at its check step. `signal` ends the install (its pulls
   * aborted, everything made removed) with the signal's reason. `record: false` (a test install) leaves no
   * installed record: the app is never seen as installed by the rounds, the updater or the listings.
   */
  async install(spec: AppSpec, hash: string, progress: Progress, opts: { signal?: AbortSignal; record?: boolean } = {}): Promise<InstalledApp> {
    const app = spec.name;
    const undo: { what: string; fn: () => Promise<unknown> }[] = [];
    let step = 'check';
    let component: string | undefined;
    let claimed = false;
    try {
      const making = this.making.get(app);
      if (making) throw new Error(`${app} is being installed on this node (${making.what})`);
      for (const [other, m] of this.making) for (const p of spec.components.flatMap((c) => c.ports)) if (m.ports.includes(p)) throw new Error(`port ${p} is being taken by ${other}, installing on this node`);
      this.making.set(app, { what: opts.record === false ? 'a test installation' : 'an installation', ports: spec.components.flatMap((c) => c.ports) });
      claimed = true;
      if (await this.installed(app)) throw new Error(`${app} is already installed on this node`);
      const taken = new Map<number, string>();
      for (const other of await this.store.find({}))
        for (const c of other.appSpecification.compose ?? [other.appSpecification])
          for (const p of c.ports ?? (c.port ? [c.port] : [])) taken.set(p, other.name);
      for (const c of spec.components) {
        component = c.name;
        const blocked = this.policy.blocks(c.repotag);
        if (blocked) throw new Error(blocked);
        for (const p of c.ports) if (taken.has(p)) throw new Error(`port ${p} is used by ${taken.get(p)} on this node`);
      }
      component = undefined;
      // The whole app's new volumes at once, before anything is pulled or made (each volume is checked again
      // as it is made, in Volumes.create, the place every allocation goes through).
      const newVolumes = spec.components.filter((c) => !this.engine.volumes.exists(containerName(app, c.name, spec.version)));
      await this.engine.volumes.assertRoom(newVolumes.reduce((t, c) => t + c.hdd, 0), `the volumes of ${app}`);
      progress({ step, status: `Checks of ${app} passed` });

      // What each part needs, measured with `npm run bench:apps` and scripts/bench/apps-start-profile.ts
      // (busy 2-core machine): the container start alone takes ~550-650 ms of Docker's time (as long as the
      // CLI's whole create + start of a plain container), so everything before it must be short. The volume
      // (fallocate + mkfs + loop mount, ~140 ms) was the longest part, and the containers were created only
      // after it, after the network (~45 ms) and after the pull's registry round trip (~80 ms) even for a
      // cached image: create waited ~180 ms. A container needs its network and its image to be created, but
      // its volume only to start, so now: network, pull and volume at once; each container is created as
      // soon as its network and image are there (a cached image at once, while the pull asks the registry
      // whether the tag moved; if it did, the container is created again from the new image); start once
      // the volumes are mounted.
      const failed: { step: string; component?: string; error: unknown }[] = [];
      const task = (st: string, comp: string | undefined, fn: () => Promise<void>) =>
        fn().catch((error) => {
          failed.push({ step: st, component: comp, error });
        });
      const settle = () => {
        if (!failed.length) return;
        ({ step, component } = failed[0]);
        throw failed[0].error;
      };
      step = 'prepare';
      const network = task('network', undefined, async () => {
        const net = await this.engine.ensureNetwork(app);
        if (net.created) undo.push({ what: `network ${net.name}`, fn: () => this.engine.removeNetwork(app) });
        progress({ step: 'network', status: `Network ${net.name} ${net.created ? 'created' : 'present'}` });
      });
      // Asked at once, awaited per component after its volume has started (the volume is the longest part).
      const cachedAll = Promise.all(spec.components.map((c) => this.engine.hasImage(c.repotag)));
      await Promise.all(
        spec.components.map(async (c, i) => {
          const name = containerName(app, c.name, spec.version);
          const volume = task('volume', c.name, async () => {
            undo.push({ what: `volume of ${name}`, fn: () => this.engine.volumes.remove(name) });
            await this.engine.volumes.create(name, c.hdd);
            progress({ step: 'volume', component: c.name, status: `Volume of ${c.hdd} GB mounted at ${this.engine.volumes.mountpoint(name)}` });
          });
          const cached = await cachedAll;
          const create = (again: boolean) =>
            task('create', c.name, async () => {
              if (again) await this.engine.removeContainer(name);
              else undo.push({ what: `container ${name}`, fn: () => this.engine.removeContainer(name) });
              await this.engine.createContainer(app, spec, i, hash);
              progress({ step: 'create', component: c.name, status: `Container ${name} ${again ? 'created again: the tag names a newer image' : 'created'}` });
            });
          const pulled = task('pull', c.name, async () => {
            progress({ step: 'pull', component: c.name, status: `Pulling image ${c.repotag}` });
            if (!cached[i]) undo.push({ what: `image ${c.repotag}`, fn: () => this.engine.removeImageIfUnused(c.repotag) });
            await this.engine.pull(c.repotag, c.repoauth, (o) => progress({ step: 'pull', component: c.name, ...o }), opts.signal);
          });
          const created = (async () => {
            await network;
            if (!cached[i]) await pulled;
            if (!failed.length) await create(false);
          })();
          await Promise.all([pulled, volume, created]);
          if (cached[i] && !failed.length) {
            const [image, made] = await Promise.all([this.engine.docker.getImage(c.repotag).inspect(), this.engine.container(name).inspect()]);
            if (image.Id !== made.Image) await create(true);
          }
        }),
      );
      settle();
      opts.signal?.throwIfAborted();
      step = 'start';
      for (const c of spec.components) {
        component = c.name;
        const name = containerName(app, c.name, spec.version);
        await this.engine.start(name);
        progress({ step, component: c.name, status: `Container ${name} started` });
      }
      component = undefined;
      const record: InstalledApp = {
        name: app,
        owner: spec.owner,
        hash,
        version: spec.version,
        appSpecification: spec.raw,
        installedAt: this.now(),
        components: spec.components.map((c) => ({ name: c.name, container: containerName(app, c.name, spec.version), desired: 'running' })),
      };
      if (opts.record !== false) await this.store.insert(record);
      return record;
    } catch (e) {
      const cause = describeDockerError(e);
      progress({ status: 'error', step, component, message: cause });
      for (const u of undo.reverse()) {
        try {
          await u.fn();
          progress({ step: 'cleanup', status: `Removed ${u.what}` });
        } catch (err) {
          progress({ step: 'cleanup', status: `Could not remove ${u.what}: ${describeDockerError(err)}` });
        }
      }
      throw new StepError(step, component, cause);
    } finally {
      if (claimed) this.making.delete(app);
    }
  }

  /** Remove everything of an installed app (or of `spec`, made without a record); kills first when `force`. */
  async remove(app: string, force: boolean, progress: Progress, made?: AppSpec): Promise<void> {
    const rec = await this.installed(app);
    const spec = rec?.appSpecification ?? made?.raw;
    const containers = rec ? rec.components.map((c) => c.container) : (await this.engine.listApp(app)).map((c) => c.Names[0].slice(1));
    if (!rec && !containers.length) throw new ApiError(404, 'NotFound', 'Application not found');
    for (const name of [...containers].reverse()) {
      const c = this.engine.container(name);
      if (force) await c.kill().catch(() => {});
      else await c.stop({ t: 10 }).catch((e) => ignoreNotRunning(e));
      await this.engine.removeContainer(name);
      progress({ step: 'container', status: `Container ${name} removed` });
    }
    for (const c of spec ? (spec.compose ?? [spec]) : []) {
      if (await this.engine.removeImageIfUnused(c.repotag)) progress({ step: 'image', status: `Image ${c.repotag} removed` });
    }
    for (const name of containers) {
      await this.engine.volumes.remove(name);
      progress({ step: 'volume', status: `Volume of ${name} removed` });
    }
    await this.engine.removeNetwork(app);
    progress({ step: 'network', status: `Network of ${app} removed` });
    await this.store.remove({ name: app }, { multi: true });
  }

  /**
   * Recreate one component's container from `spec` (its volume kept, or emptied when `wipe`): a redeploy by
   * the owner, and each component of a soft update.
   */
  async recreate(app: string, spec: AppSpec, i: number, hash: string, container: string, wipe: boolean, progress: Progress): Promise<void> {
    const c = spec.components[i];
    await this.engine.container(container).stop({ t: 10 }).catch(() => {});
    await this.engine.removeContainer(container);
    progress({ step: 'container', component: c.name, status: `Container ${container} removed` });
    await this.engine.pull(c.repotag, c.repoauth, (o) => progress({ step: 'pull', component: c.name, ...o }));
    await this.engine.volumes.create(container, c.hdd);
    if (wipe) {
      await this.engine.volumes.wipe(container);
      progress({ step: 'volume', component: c.name, status: `Data of ${container} removed` });
    }
    await this.engine.ensureNetwork(app);
    await this.engine.createContainer(app, spec, i, hash);
    await this.engine.start(container);
    progress({ step: 'start', component: c.name, status: `Container ${container} started` });
    // A redeploy may pull a newer image under the same tag: that image is the installed one from now on
    // (the tampering checks compare against it).
    const info = await this.engine.container(container).inspect();
    const rec = await this.installed(app);
    const comp = rec?.components.find((x) => x.container === container);
    if (rec && comp) {
      comp.imageId = info.Image;
      await this.store.update({ name: app }, { $set: { components: rec.components } });
    }
  }

  /**
   * Move an installed app to a newer global specification. Soft (containers recreated from the new spec on
   * their kept volumes) when the components and each one's `hdd` are unchanged, as the reference decides;
   * hard (removed and installed again, data lost) when a component came, went, was renamed or resized. The
   * new images are pulled first, so a registry that fails leaves the running app as it is.
   */
  async update(rec: InstalledApp, spec: AppSpec, hash: string, progress: Progress): Promise<'soft' | 'hard'> {
    const old = normalise(rec.appSpecification);
    const same =
      old.components.length === spec.components.length &&
      spec.components.every((c, i) => containerName(rec.name, c.name, spec.version) === rec.components[i]?.container && c.hdd === old.components[i].hdd);
    for (const c of spec.components) {
      const blocked = this.policy.blocks(c.repotag);
      if (blocked) throw new StepError('check', c.name, blocked);
      await this.engine.pull(c.repotag, c.repoauth, (o) => progress({ step: 'pull', component: c.name, ...o }));
    }
    if (!same) {
      await this.remove(rec.name, false, progress);
      await this.install(spec, hash, progress);
      return 'hard';
    }
    const desired = new Map(rec.components.map((c) => [c.name, c]));
    for (const [i, c] of rec.components.entries()) {
      // A component its owner stopped stays stopped (recreated, not started).
      await this.recreate(rec.name, spec, i, hash, c.container, false, progress);
      if (desired.get(c.name)?.desired === 'stopped') await this.engine.container(c.container).stop({ t: 10 }).catch(ignoreNotRunning);
    }
    // The record moves to the new spec once every container runs it (a failure midway is tried again).
    await this.store.update({ name: rec.name }, { $set: { hash, owner: spec.owner, version: spec.version, appSpecification: spec.raw } });
    for (const c of old.components) if (!spec.components.some((n) => n.repotag === c.repotag) && (await this.engine.removeImageIfUnused(c.repotag))) progress({ step: 'image', status: `Image ${c.repotag} removed` });
    return 'soft';
  }

  private readonly appLocks = new Map<string, Promise<unknown>>();

  /**
   * Run `fn` alone among the actions on one app's containers that go through here: the lifecycle verbs and
   * the reconciler's restarts. Without it, a reconciler round that saw a component down during an
   * apprestart started it again after the appkill that followed (seen in a suite run on a busy machine).
   */
  withApp<T>(app: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.appLocks.get(app) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.appLocks.set(app, tail);
    void tail.then(() => {
      if (this.appLocks.get(app) === tail) this.appLocks.delete(app);
    });
    return run;
  }

  /** Set the desired state of some components of an installed app. */
  async setDesired(app: string, components: string[], desired: 'running' | 'stopped'): Promise<void> {
    const rec = await this.installed(app);
    if (!rec) return;
    for (const c of rec.components)
      if (components.includes(c.name)) {
        c.desired = desired;
        if (desired === 'running') {
          delete c.stoppedReason;
          delete c.stoppedAt;
        }
      }
    await this.store.update({ name: app }, { $set: { components: rec.components } });
  }
}

export function ignoreNotRunning(e: any): void {
  if (e?.statusCode === 304 || e?.statusCode === 409) return;
  ignore404(e);
}
