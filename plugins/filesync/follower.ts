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
 * - Devices: a peer's Syncthing device is added when a node it runs shares an app with this one, taken out
 *   of a folder when its node no longer runs that app, and removed from Syncthing once it shares no app
 *   with this node (only devices this follower added: the operator's own devices are never touched).
 * - Transitions go on the node's event bus (`filesync.shared`, `.paused`, `.promoted`, `.elected`,
 *   `.steppeddown`, `.removed`, `.deviceremoved`): never once per round, only when something changed.
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

/** A Syncthing device this follower added for a peer node (the only devices it ever removes). */
export interface DeviceRecord {
  _id?: string;
  device: string;
  node: string;
  address: string;
  at: number;
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
  devices: Collection<DeviceRecord>;
  emit: (name: string, data: Record<string, unknown>) => void;
  log: Log;
  intervalMs: number;
  primaryTimeoutMs: number;
}

export class Follower {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;
  /** When the first round found Syncthing answering: the start of the listening window (see decide). */
  private firstRoundAt = 0;
  private readonly roles = new Map<string, { role: 'primary' | 'standby'; since: number }>();
  private readonly heard = new Map<string, { node: string; since: number; at: number }>();
  /**
   * Folders whose pause for an unmounted volume was reported (`filesync.paused`), once per unmount. Kept
   * apart from Syncthing's config: a pause Syncthing applied for a call that then failed (a timeout at
   * load) looked done on the next round, and its event was never sent (a suite run at load 8).
   */
  private readonly pausedReported = new Set<string>();
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
    this.firstRoundAt ||= Date.now();
    this.selfDevice ||= await this.d.client.deviceId();
    const installed = await apps.list();
    const wanted = new Set<string>();
    const inUse = new Set<string>();
    let complete = true;
    for (const app of installed)
      for (const c of app.components) {
        const mode = syncMode(c.containerData);
        if (!mode) continue;
        wanted.add(c.container);
        try {
          for (const d of await this.follow(app, c, mode, peers)) inUse.add(d);
        } catch (e) {
          complete = false;
          this.d.log.warn({ app: app.name, component: c.name, err: (e as Error).message }, 'filesync: folder not followed this round');
        }
      }
    // Folders of apps no longer here leave Syncthing's config (their files are not touched).
    for (const s of await this.d.store.find({})) {
      if (wanted.has(s.folder)) continue;
      await this.d.client.call('DELETE', `/rest/config/folders/${s.folder}`).catch(() => {});
      await this.d.store.remove({ folder: s.folder }, {});
      this.roles.delete(s.folder);
      this.d.emit('filesync.removed', { app: s.app, folder: s.folder });
    }
    // Devices that share no app with this node any more leave Syncthing's config. Only after a round that
    // followed every folder (an error could hide a device still in use) and with the peer network present
    // (without it nothing says where apps run).
    if (complete && peers) await this.pruneDevices(inUse);
  }

  private async pruneDevices(inUse: Set<string>) {
    for (const r of await this.d.devices.find({})) {
      if (inUse.has(r.device)) continue;
      try {
        await this.d.client.call('DELETE', `/rest/config/devices/${r.device}`);
      } catch (e) {
        if ((e as { code?: number }).code !== 404) throw e;
      }
      await this.d.devices.remove({ device: r.device }, { multi: true });
      this.d.log.info({ device: r.device, node: r.node }, 'filesync: device removed (it shares no app with this node)');
      this.d.emit('filesync.deviceremoved', { device: r.device, node: r.node, address: r.address });
    }
  }

  /** Within the listening window after the first round: the peer network may not have told where apps run yet. */
  private settling(peers: PeerNetwork | undefined): boolean {
    return !!peers && Date.now() - this.firstRoundAt < this.d.primaryTimeoutMs;
  }

  /**
   * The other nodes the peer network lists for the app, those reached this round (with their device id),
   * and the devices of all listed nodes (a listed node not reached this round keeps its last known device).
   */
  private async others(app: string, peers: PeerNetwork | undefined): Promise<{ listed: number; nodes: Set<string>; reached: Other[]; devices: Set<string> }> {
    if (!peers) return { listed: 0, nodes: new Set(), reached: [], devices: new Set() };
    const locs = (await peers.locations(app)).filter((l) => l.node !== peers.nodeKey);
    const reached: Other[] = [];
    const devices = new Set<string>();
    for (const l of locs) {
      try {
        const o = { node: l.node, address: l.ip, device: await this.d.link.deviceId(l.ip) };
        reached.push(o);
        devices.add(o.device);
      } catch (e) {
        const known = (await this.d.devices.find({ node: l.node })).sort((a, b) => b.at - a.at)[0];
        if (known) devices.add(known.device);
        this.d.log.debug({ app, peer: l.ip, err: (e as Error).message }, 'filesync: peer device id not reached');
      }
    }
    return { listed: locs.length, nodes: new Set(locs.map((l) => l.node)), reached, devices };
  }

  /** Follow one component's folder; answers the devices it keeps sharing with (for device removal). */
  private async follow(app: InstalledAppView, c: AppComponentView, mode: 'r' | 'g', peers: PeerNetwork | undefined): Promise<string[]> {
    const folder = c.container;
    if (!isFolderId(folder)) throw new Error(`container name ${folder} is not a usable folder id`);
    const existing = await this.folderConfig(folder);
    const { listed, nodes, reached, devices } = await this.others(app.name, peers);
    if (!c.mounted) {
      // Never share the folder of an unmounted volume: what is there is the empty mount point.
      if (existing && (!existing.paused || existing.type !== 'receiveonly')) await this.putFolder({ ...existing, paused: true, type: 'receiveonly' });
      if (existing && !this.pausedReported.has(folder)) {
        this.pausedReported.add(folder);
        this.d.emit('filesync.paused', { app: app.name, folder, reason: 'volume not mounted' });
      }
      if (mode === 'g') {
        // A g: instance without its data cannot be the one that runs.
        if (this.roles.get(folder)?.role === 'primary') {
          this.roles.set(folder, { role: 'standby', since: 0 });
          this.d.emit('filesync.steppeddown', { app: app.name, folder, reason: 'volume not mounted' });
        }
        if (c.desired === 'running') await this.d.apps()!.stopComponent(app.name, c.name);
      }
      // The devices of the nodes still listed for the app stay configured (the folder shares again once the
      // volume is back); those this follower added for nodes that left the app may go.
      const managed = new Set((await this.d.devices.find({})).map((r) => r.device));
      return ((existing?.devices ?? []) as { deviceID: string }[]).map((x) => x.deviceID).filter((x) => devices.has(x) || !managed.has(x));
    }
    this.pausedReported.delete(folder);
    const state = (await this.d.store.findOne({ folder })) ?? (await this.d.store.insert({ folder, app: app.name, mode, acquired: false }));
    for (const o of reached) {
      await this.recordDevice(o);
      await this.ensureDevice(o);
    }
    const keep = [...devices];

    const peerReports = listed > 0 ? await this.peerReports(app.name, folder, reached) : [];
    if (!state.acquired && (mode === 'r' || this.roles.get(folder)?.role !== 'primary')) {
      // A node that just started may not know its peers yet: alone only once the listening window is over.
      if (listed === 0) {
        if (!this.settling(peers)) await this.setAcquired(folder, 'the only node of the app: its data is the origin');
      }
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
        await this.ensureFolder(app.name, folder, c, type, keep, existing);
        if (c.desired !== 'running') await this.d.apps()!.startComponent(app.name, c.name);
        await peers?.broadcast(PRIMARY, { app: app.name, folder, since: this.roles.get(folder)!.since }).catch(() => {});
        return keep;
      }
    }
    await this.ensureFolder(app.name, folder, c, type, keep, existing);
    return keep;
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
      this.d.emit('filesync.steppeddown', { app: app.name, folder, reason: 'another node was elected first', primary: h.node });
    }
    if (alive) {
      this.roles.set(folder, { role: 'standby', since: 0 });
      return 'standby';
    }
    // After a start, listen for a primary a while before electing (it may be running elsewhere, and the
    // peer network may not yet have said where the app runs: an empty list is no proof of being alone).
    if (this.settling(this.d.peers())) return mine?.role ?? 'undecided';
    // An unreachable node is not a candidate; a node without the volume mounted neither.
    const reports: FolderReport[] = [await this.report(app, c, folder, acquired), ...peerReports];
    const eligible = reports.filter((r) => r.mounted).sort(rank);
    if (eligible[0]?.node === this.nodeKey) {
      this.roles.set(folder, { role: 'primary', since: Date.now() });
      // The elected copy is the data from now on: the others acquire from it.
      if (!acquired) await this.setAcquired(folder, 'elected primary');
      this.d.log.info({ app: app.name, folder, candidates: eligible.length }, 'filesync: elected primary of a g: app');
      this.d.emit('filesync.elected', { app: app.name, folder, candidates: eligible.length, items: eligible[0].localItems });
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

  /**
   * The folder as this round wants it: its path, type and the devices of the nodes listed for the app.
   * A device this follower added whose node no longer runs the app leaves the folder; devices the operator
   * added stay.
   */
  private async ensureFolder(app: string, folder: string, c: AppComponentView, type: string, keep: string[], existing: Record<string, any> | null) {
    const devices = [this.selfDevice, ...keep];
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
      const managed = new Set((await this.d.devices.find({})).map((r) => r.device));
      const wanted = new Set(devices);
      const current = (existing.devices ?? []) as { deviceID: string }[];
      const have = new Set(current.map((x) => x.deviceID));
      const added = devices.filter((x) => !have.has(x));
      const dropped = current.filter((x) => managed.has(x.deviceID) && !wanted.has(x.deviceID)).map((x) => x.deviceID);
      const same = existing.path === path && existing.type === type && !existing.paused && !added.length && !dropped.length;
      if (same) return;
      const kept = current.filter((x) => !dropped.includes(x.deviceID));
      await this.putFolder({ ...existing, ...want, devices: [...kept, ...added.map((deviceID) => ({ deviceID }))] });
      if (added.length) this.d.emit('filesync.shared', { app, folder, devices: added });
      if (dropped.length) this.d.emit('filesync.unshared', { app, folder, devices: dropped });
      if (existing.type !== 'sendreceive' && type === 'sendreceive') this.d.emit('filesync.promoted', { app, folder, type });
      return;
    }
    await this.putFolder({ ...want, devices: devices.map((deviceID) => ({ deviceID })) });
    this.d.emit('filesync.shared', { app, folder, devices: keep, type });
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

  /** Remember which node a device belongs to: only devices recorded here are ever removed. */
  private async recordDevice(o: Other) {
    const r = await this.d.devices.findOne({ device: o.device });
    if (r && r.node === o.node && r.address === o.address && Date.now() - r.at < 60_000) return;
    if (r) await this.d.devices.update({ device: o.device }, { $set: { node: o.node, address: o.address, at: Date.now() } }, {});
    else await this.d.devices.insert({ device: o.device, node: o.node, address: o.address, at: Date.now() });
  }
}

function rank(a: FolderReport, b: FolderReport): number {
  if (a.acquired !== b.acquired) return a.acquired ? -1 : 1;
  if (a.localItems !== b.localItems) return b.localItems - a.localItems;
  if (a.localBytes !== b.localBytes) return b.localBytes - a.localBytes;
  return a.node < b.node ? -1 : a.node > b.node ? 1 : 0;
}

export type { SyncMode };
