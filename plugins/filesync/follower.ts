/**
 * App data that follows the app. Every round, for each installed component whose `containerData` is `r:`
 * or `g:`, the component's data folder (`<volume mountpoint>/appdata`) is a Syncthing folder (id: the
 * container name, the same on every node) shared with the Syncthing of every other node the peer network
 * says runs the app.
 *
 * - A folder whose volume is not mounted is never created, and an existing one is paused and receive-only:
 *   the empty folder under an unmounted volume is never sent.
 * - Acquire before destroy: a folder joining others starts receive-only and becomes send-receive (`r:`) or
 *   electable (`g:`) only once it holds what the others report holding (`POST /apps/promotedfolders` on
 *   them), with nothing left to pull. An empty or unknown index is never taken as synced: without a report
 *   from a peer that holds the data nothing is acquired (a node alone is the origin).
 * - `g:` one instance runs (the primary; its folder send-receive), the others keep a receive-only copy
 *   with the container stopped. The primary says so every round (`filesync.primary` on the peer network);
 *   when nothing is heard from it for `primaryTimeoutMs`, the nodes ask each other what they hold and
 *   the mounted node with the most complete copy (acquired first, then items, bytes, then the lowest node
 *   key) takes over: folder send-receive, container started.
 */
import type { Collection, Log } from '../../core/plugin-api.ts';
import type { AppComponentView, AppsService, InstalledAppView } from '../apps/api.ts';
import type { PeerNetwork } from '../peers/api.ts';
import type { SyncthingClient } from './client.ts';
import { syncMode, type SyncMode } from './container-data.ts';
import { isFolderId } from './ids.ts';
import type { PeerLink } from './peers.ts';

export interface FolderReport {
  app: string;
  component: string;
  folder: string;
  mode: 'r' | 'g';
  node: string;
  mounted: boolean;
  acquired: boolean;
  role: 'primary' | 'standby' | 'undecided' | 'replica';
  type: string;
  state: string;
  localItems: number;
  localBytes: number;
  globalItems: number;
  needItems: number;
  sequence: number;
}

export interface FolderState {
  _id?: string;
  folder: string;
  app: string;
  mode?: 'r' | 'g';
  acquired: boolean;
}

interface Other {
  node: string;
  address: string;
  device: string;
}

const PRIMARY = 'filesync.primary';

export interface FollowerDeps {
  client: SyncthingClient;
  apps: () => AppsService | undefined;
  peers: () => PeerNetwork | undefined;
  link: PeerLink;
  store: Collection<FolderState>;
  log: Log;
  intervalMs: number;
  primaryTimeoutMs: number;
}

export class Follower {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  private readonly startedAt = Date.now();
  private readonly roles = new Map<string, { role: 'primary' | 'standby'; since: number }>();
  private readonly heard = new Map<string, { node: string; since: number; at: number }>();
  private unsubscribe: (() => void) | null = null;
  private selfDevice = '';

  constructor(private readonly d: FollowerDeps) {}

  private get nodeKey(): string {
    return this.d.peers()?.nodeKey ?? 'self';
  }

  start(): void {
    // The first round at once: after a restart, g: folders are receive-only and their containers stopped
    // until this node is elected again (the apps plugin may have started them at boot).
    void this.run();
    const loop = () => {
      this.timer = setTimeout(async () => {
        await this.run();
        if (!this.stopped) loop();
      }, this.d.intervalMs);
      this.timer.unref();
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.unsubscribe?.();
    await this.running;
  }

  run(): Promise<void> {
    this.running ??= this.round()
      .catch((e) => this.d.log.warn({ err: (e as Error).message }, 'filesync: app folder round failed'))
      .finally(() => (this.running = null));
    return this.running;
  }

  private listen(peers: PeerNetwork | undefined) {
    if (this.unsubscribe || !peers) return;
    this.unsubscribe = peers.on<{ folder: string; since: number }>(PRIMARY, (m) => {
      const f = m.payload?.folder;
      if (typeof f !== 'string' || typeof m.payload.since !== 'number') return;
      this.heard.set(f, { node: m.origin, since: m.payload.since, at: Date.now() });
    });
  }

  private async round(): Promise<void> {
    const apps = this.d.apps();
    const peers = this.d.peers();
    this.listen(peers);
    if (!apps || !(await this.d.client.ping())) return;
    this.selfDevice ||= await this.d.client.deviceId();
    const installed = await apps.list();
    const wanted = new Set<string>();
    for (const app of installed)
      for (const c of app.components) {
        const mode = syncMode(c.containerData);
        if (!mode) continue;
        wanted.add(c.container);
        try {
          await this.follow(app, c, mode, peers);
        } catch (e) {
          this.d.log.warn({ app: app.name, component: c.name, err: (e as Error).message }, 'filesync: folder not followed this round');
        }
      }
    // Folders of apps no longer here leave Syncthing's config (their files are not touched).
    for (const s of await this.d.store.find({})) {
      if (wanted.has(s.folder)) continue;
      await this.d.client.call('DELETE', `/rest/config/folders/${s.folder}`).catch(() => {});
      await this.d.store.remove({ folder: s.folder }, {});
      this.roles.delete(s.folder);
    }
  }

  private async others(app: string, peers: PeerNetwork | undefined): Promise<{ listed: number; nodes: Set<string>; reached: Other[] }> {
    if (!peers) return { listed: 0, nodes: new Set(), reached: [] };
    const locs = (await peers.locations(app)).filter((l) => l.node !== peers.nodeKey);
    const reached: Other[] = [];
    for (const l of locs) {
      try {
        reached.push({ node: l.node, address: l.ip, device: await this.d.link.deviceId(l.ip) });
      } catch (e) {
        this.d.log.debug({ app, peer: l.ip, err: (e as Error).message }, 'filesync: peer device id not reached');
      }
    }
    return { listed: locs.length, nodes: new Set(locs.map((l) => l.node)), reached };
  }

  private async follow(app: InstalledAppView, c: AppComponentView, mode: 'r' | 'g', peers: PeerNetwork | undefined): Promise<void> {
    const folder = c.container;
    if (!isFolderId(folder)) throw new Error(`container name ${folder} is not a usable folder id`);
    const existing = await this.folderConfig(folder);
    if (!c.mounted) {
      // Never share the folder of an unmounted volume: what is there is the empty mount point.
      if (existing && (!existing.paused || existing.type !== 'receiveonly')) await this.putFolder({ ...existing, paused: true, type: 'receiveonly' });
      if (mode === 'g') {
        // A g: instance without its data cannot be the one that runs.
        if (this.roles.get(folder)?.role === 'primary') this.roles.set(folder, { role: 'standby', since: 0 });
        if (c.desired === 'running') await this.d.apps()!.stopComponent(app.name, c.name);
      }
      return;
    }
    const state = (await this.d.store.findOne({ folder })) ?? (await this.d.store.insert({ folder, app: app.name, mode, acquired: false }));
    const { listed, nodes, reached } = await this.others(app.name, peers);
    for (const o of reached) await this.ensureDevice(o);

    const peerReports = listed > 0 ? await this.peerReports(app.name, folder, reached) : [];
    if (!state.acquired && (mode === 'r' || this.roles.get(folder)?.role !== 'primary')) {
      if (listed === 0) await this.setAcquired(folder, 'the only node of the app: its data is the origin');
      else if (existing && (await this.holdsWhatPeersHold(folder, peerReports))) await this.setAcquired(folder, 'holds what its peers hold');
      else if (mode === 'r' && existing && peerReports.length === listed && !peerReports.some((r) => r.acquired)) {
        // No node holds the data yet (installed on several nodes at once): the best copy is the origin.
        const best = [await this.report(app, c, folder, false), ...peerReports].filter((r) => r.mounted).sort(rank)[0];
        if (best?.node === this.nodeKey) await this.setAcquired(folder, 'origin: no node of the app held the data yet');
      }
    }
    const acquired = (await this.d.store.findOne({ folder }))!.acquired;

    let type: string;
    if (mode === 'r') type = acquired ? 'sendreceive' : 'receiveonly';
    else {
      const role = await this.decide(app, c, folder, acquired, peerReports, listed, nodes);
      type = role === 'primary' ? 'sendreceive' : 'receiveonly';
      if (role !== 'primary' && c.desired === 'running') await this.d.apps()!.stopComponent(app.name, c.name);
      if (role === 'primary') {
        await this.ensureFolder(folder, c, type, reached, existing);
        if (c.desired !== 'running') await this.d.apps()!.startComponent(app.name, c.name);
        await peers?.broadcast(PRIMARY, { app: app.name, folder, since: this.roles.get(folder)!.since }).catch(() => {});
        return;
      }
    }
    await this.ensureFolder(folder, c, type, reached, existing);
  }

  /** The role of this node for a `g:` folder this round. */
  private async decide(app: InstalledAppView, c: AppComponentView, folder: string, acquired: boolean, peerReports: FolderReport[], listed: number, nodes: Set<string>): Promise<'primary' | 'standby' | 'undecided'> {
    const mine = this.roles.get(folder);
    const h = this.heard.get(folder);
    // Only a node the peer network lists for the app may be its primary (a claim from elsewhere is ignored).
    const alive = h && Date.now() - h.at < this.d.primaryTimeoutMs && nodes.has(h.node);
    if (mine?.role === 'primary') {
      // Two primaries (elected at once, or one back from a partition): the earlier election stays.
      if (!alive || h.since > mine.since || (h.since === mine.since && h.node > this.nodeKey)) return 'primary';
      this.d.log.warn({ app: app.name, folder, other: h.node }, 'filesync: another node was elected first; stepping down');
    }
    if (alive) {
      this.roles.set(folder, { role: 'standby', since: 0 });
      return 'standby';
    }
    // After a start, listen for a primary a while before electing (it may be running elsewhere).
    if (listed > 0 && Date.now() - this.startedAt < this.d.primaryTimeoutMs) return mine?.role ?? 'undecided';
    // An unreachable node is not a candidate; a node without the volume mounted neither.
    const reports: FolderReport[] = [await this.report(app, c, folder, acquired), ...peerReports];
    const eligible = reports.filter((r) => r.mounted).sort(rank);
    if (eligible[0]?.node === this.nodeKey) {
      this.roles.set(folder, { role: 'primary', since: Date.now() });
      // The elected copy is the data from now on: the others acquire from it.
      if (!acquired) await this.setAcquired(folder, 'elected primary');
      this.d.log.info({ app: app.name, folder, candidates: eligible.length }, 'filesync: elected primary of a g: app');
      return 'primary';
    }
    return mine?.role ?? 'undecided';
  }

  /** What the reached nodes say their copy of this folder holds (the node key is ours for them, not theirs). */
  private async peerReports(app: string, folder: string, reached: Other[]): Promise<FolderReport[]> {
    const out: FolderReport[] = [];
    await Promise.all(
      reached.map(async (o) => {
        try {
          const r = (await this.d.link.promoted(o.address, app)).find((x) => x.folder === folder);
          if (r) out.push({ ...r, node: o.node });
        } catch {
          /* no word from that node this round */
        }
      }),
    );
    return out;
  }

  /** Synced only on evidence: idle, nothing to pull, and at least what an acquired, mounted peer holds. */
  private async holdsWhatPeersHold(folder: string, reports: FolderReport[]): Promise<boolean> {
    const holders = reports.filter((r) => r.mounted && r.acquired && r.state !== 'none');
    if (!holders.length) return false;
    const st = await this.status(folder);
    if (!st || st.state !== 'idle' || st.needTotalItems > 0) return false;
    const most = Math.max(...holders.map((r) => r.localItems));
    return st.globalTotalItems >= most && st.localTotalItems >= most;
  }

  private async setAcquired(folder: string, why: string) {
    await this.d.store.update({ folder }, { $set: { acquired: true } }, {});
    this.d.log.info({ folder, why }, 'filesync: folder acquired');
  }

  /** What this node's folder of a component holds (the promoted-folder answer). */
  async report(app: InstalledAppView, c: AppComponentView, folder: string, acquired?: boolean): Promise<FolderReport> {
    const mode = syncMode(c.containerData) as 'r' | 'g';
    acquired ??= !!(await this.d.store.findOne({ folder }))?.acquired;
    const cfg = await this.folderConfig(folder).catch(() => null);
    // Counts only from a mounted, running folder: an unmounted volume's folder holds nothing to elect.
    const st = c.mounted && cfg && !cfg.paused ? await this.status(folder).catch(() => null) : null;
    const role = mode === 'r' ? 'replica' : (this.roles.get(folder)?.role ?? 'undecided');
    return {
      app: app.name,
      component: c.name,
      folder,
      mode,
      node: this.nodeKey,
      mounted: c.mounted,
      acquired,
      role,
      type: cfg?.type ?? 'none',
      state: st?.state ?? (cfg ? (cfg.paused ? 'paused' : 'unknown') : 'none'),
      localItems: st?.localTotalItems ?? 0,
      localBytes: st?.localBytes ?? 0,
      globalItems: st?.globalTotalItems ?? 0,
      needItems: st?.needTotalItems ?? 0,
      sequence: st?.sequence ?? 0,
    };
  }

  async promoted(appname?: string): Promise<FolderReport[]> {
    const apps = this.d.apps();
    if (!apps) return [];
    const list = appname ? [await apps.installed(appname)].filter((x): x is InstalledAppView => !!x) : await apps.list();
    const out: FolderReport[] = [];
    for (const app of list) for (const c of app.components) if (syncMode(c.containerData)) out.push(await this.report(app, c, c.container));
    return out;
  }

  private async status(folder: string): Promise<Record<string, any> | null> {
    try {
      return (await this.d.client.call('GET', '/rest/db/status', { query: { folder } })).json as Record<string, any>;
    } catch {
      return null;
    }
  }

  private async folderConfig(folder: string): Promise<Record<string, any> | null> {
    try {
      return (await this.d.client.call('GET', `/rest/config/folders/${folder}`)).json as Record<string, any>;
    } catch (e) {
      if ((e as { code?: number }).code === 404) return null;
      throw e;
    }
  }

  private putFolder(cfg: Record<string, any>) {
    return this.d.client.call('PUT', `/rest/config/folders/${cfg.id}`, { body: cfg });
  }

  private async ensureFolder(folder: string, c: AppComponentView, type: string, reached: Other[], existing: Record<string, any> | null) {
    const devices = [this.selfDevice, ...reached.map((o) => o.device)];
    const path = `${c.mountpoint}/appdata`;
    const want = {
      id: folder,
      label: folder,
      path,
      type,
      paused: false,
      fsWatcherEnabled: true,
      fsWatcherDelayS: 1,
      rescanIntervalS: 60,
    };
    if (existing) {
      const have = new Set((existing.devices ?? []).map((x: { deviceID: string }) => x.deviceID));
      const same = existing.path === path && existing.type === type && !existing.paused && devices.every((x) => have.has(x));
      if (same) return;
      const merged = [...(existing.devices ?? []), ...devices.filter((x) => !have.has(x)).map((deviceID) => ({ deviceID }))];
      await this.putFolder({ ...existing, ...want, devices: merged });
      return;
    }
    await this.putFolder({ ...want, devices: devices.map((deviceID) => ({ deviceID })) });
  }

  private async ensureDevice(o: Other) {
    const address = this.d.link.syncthingAddress(o.address);
    try {
      const have = (await this.d.client.call('GET', `/rest/config/devices/${o.device}`)).json as { addresses?: string[] };
      if (have?.addresses?.includes(address)) return;
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
    }
    await this.d.client.call('PUT', `/rest/config/devices/${o.device}`, { body: { deviceID: o.device, name: o.address, addresses: [address], autoAcceptFolders: false } });
  }
}

function rank(a: FolderReport, b: FolderReport): number {
  if (a.acquired !== b.acquired) return a.acquired ? -1 : 1;
  if (a.localItems !== b.localItems) return b.localItems - a.localItems;
  if (a.localBytes !== b.localBytes) return b.localBytes - a.localBytes;
  return a.node < b.node ? -1 : a.node > b.node ? 1 : 0;
}

export type { SyncMode };
