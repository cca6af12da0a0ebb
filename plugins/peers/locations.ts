/**
 * Where apps run, install and failed to install, as the nodes' notices say. A node announces all the apps
 * it runs in one `apprunning` notice (at start, on change, and every `announceMs`); an entry not heard
 * again within `ttlMs` is gone (its node stopped announcing), an `appremoved` notice drops it at once.
 *
 * Each entry keeps when this node heard it (`heardAt`, its own clock) beside when the sender says it sent
 * it (`broadcastedAt`): liveness is judged on the receiver's clock, so a sender whose clock runs behind
 * (by less than the TTL less its announcement period) is not taken for gone, and a notice delivered late
 * counts from its send time (see `apply`). An
 * installing notice carries the sender's first announcement time (`announcedAt`), which a re-announcement
 * during a long pull repeats: the placement loop ranks installers by it.
 */
import type { AppLocation, AppsHeard } from './api.ts';

export interface RunningNotice {
  ip: string;
  apps: { name: string; hash: string; runningSince: number }[];
}

export interface InstallingLocation {
  name: string;
  ip: string;
  node: string;
  broadcastedAt: number;
  /** The node's first announcement of this install (its clock); a re-announcement keeps it. */
  announcedAt?: number;
  error?: string;
}

type Heard<T> = T & { heardAt: number };

const NAME = /^[a-zA-Z0-9_-]{1,128}$/;
const time = (x: unknown): number | undefined => (typeof x === 'number' && Number.isFinite(x) && x > 0 ? x : undefined);

export class Locations {
  private readonly running = new Map<string, Map<string, Heard<AppLocation>>>();
  private readonly installing = new Map<string, Map<string, Heard<InstallingLocation>>>();
  private readonly errors = new Map<string, Map<string, Heard<InstallingLocation>>>();
  /** Every node heard from by a running notice, with the place it announced. */
  private readonly nodeInfo = new Map<string, Heard<{ node: string; ip: string; place: any; broadcastedAt: number }>>();

  constructor(private readonly now: () => number, private readonly ttlMs: number) {}

  /**
   * Apply one notice; false when its payload is not one. `heardAt`: when it counts as heard; by default
   * now, but never later than its send time plus the TTL: a notice delivered late (a catch-up after a
   * partition heals) must not bring a node that died meanwhile back to life, while a sender whose clock
   * runs behind by less than the TTL less its announcement period stays live.
   */
  apply(type: string, payload: any, node: string, sentAt: number, heardAt = Math.min(this.now(), sentAt + this.ttlMs)): boolean {
    if (!payload || typeof payload !== 'object' || typeof payload.ip !== 'string' || payload.ip.length > 64) return false;
    if (type === 'apprunning') {
      if (!Array.isArray(payload.apps) || payload.apps.length > 1000) return false;
      const place = payload.place && typeof payload.place === 'object' && !Array.isArray(payload.place) && typeof payload.place.tier === 'string' ? payload.place : null;
      const before = this.nodeInfo.get(node);
      if (!before || before.broadcastedAt <= sentAt) this.nodeInfo.set(node, { node, ip: payload.ip, place, broadcastedAt: sentAt, heardAt });
      // The notice lists every app the node runs: apps it no longer lists are no longer there.
      for (const m of this.running.values()) {
        const cur = m.get(node);
        if (cur && cur.broadcastedAt <= sentAt) m.delete(node);
      }
      for (const a of payload.apps) {
        if (!a || typeof a.name !== 'string' || !NAME.test(a.name) || typeof a.hash !== 'string' || a.hash.length > 128) continue;
        this.at(this.running, a.name).set(node, { name: a.name, hash: a.hash, ip: payload.ip, node, broadcastedAt: sentAt, runningSince: Number(a.runningSince) || sentAt, heardAt });
        this.installing.get(a.name)?.delete(node);
      }
      return true;
    }
    if (typeof payload.name !== 'string' || !NAME.test(payload.name)) return false;
    const name = payload.name;
    if (type === 'appremoved') {
      this.running.get(name)?.delete(node);
      this.installing.get(name)?.delete(node);
      return true;
    }
    if (type === 'appinstalling') {
      const m = this.at(this.installing, name);
      // An install notice without a first announcement time (one made by hand) keeps the one heard before.
      const announcedAt = time(payload.announcedAt) ?? m.get(node)?.announcedAt ?? sentAt;
      m.set(node, { name, ip: payload.ip, node, broadcastedAt: sentAt, announcedAt, heardAt });
      this.errors.get(name)?.delete(node);
      return true;
    }
    if (type === 'appinstallingerror') {
      this.installing.get(name)?.delete(node);
      this.at(this.errors, name).set(node, { name, ip: payload.ip, node, broadcastedAt: sentAt, error: String(payload.error ?? '').slice(0, 500), heardAt });
      return true;
    }
    return false;
  }

  private at<T>(m: Map<string, Map<string, T>>, name: string) {
    let x = m.get(name);
    if (!x) m.set(name, (x = new Map()));
    return x;
  }

  /** The live entries (heard within the TTL), the others dropped. */
  private live<T extends { heardAt: number }>(m: Map<string, Map<string, T>>, name?: string): T[] {
    const cut = this.now() - this.ttlMs;
    const out: T[] = [];
    for (const [app, nodes] of m) {
      if (name !== undefined && app !== name) continue;
      for (const [k, v] of nodes) {
        if (v.heardAt < cut) nodes.delete(k);
        else out.push(v);
      }
      if (!nodes.size) m.delete(app);
    }
    return out;
  }

  /** As the routes show them: in send order, without the receiver's own time. */
  private list<T extends { broadcastedAt: number; heardAt: number }>(m: Map<string, Map<string, T>>, name?: string): Omit<T, 'heardAt'>[] {
    return this.live(m, name)
      .sort((a, b) => a.broadcastedAt - b.broadcastedAt)
      .map(({ heardAt: _, ...v }) => v);
  }

  nodes() {
    const cut = this.now() - this.ttlMs;
    for (const [k, v] of this.nodeInfo) if (v.heardAt < cut) this.nodeInfo.delete(k);
    return [...this.nodeInfo.values()].map(({ heardAt: _, ...v }) => v);
  }

  locations(name?: string): AppLocation[] {
    return this.list(this.running, name);
  }
  installingLocations(name?: string): InstallingLocation[] {
    return this.list(this.installing, name);
  }
  errorLocations(name?: string): InstallingLocation[] {
    return this.list(this.errors, name);
  }

  /** Per app, the live running, installing and error entries with when this node heard them (placement). */
  heard(): AppsHeard {
    const out: AppsHeard = new Map();
    const of = (name: string) => {
      let h = out.get(name);
      if (!h) out.set(name, (h = { running: [], installing: [], errors: [] }));
      return h;
    };
    for (const r of this.live(this.running)) {
      // A node whose running notice says it does not take part in placement keeps what it runs.
      const fixed = this.nodeInfo.get(r.node)?.place?.placement === false;
      of(r.name).running.push({ node: r.node, ip: r.ip, runningSince: r.runningSince, heardAt: r.heardAt, ...(fixed ? { fixed } : {}) });
    }
    for (const i of this.live(this.installing)) of(i.name).installing.push({ node: i.node, ip: i.ip, announcedAt: i.announcedAt ?? i.broadcastedAt, heardAt: i.heardAt });
    for (const e of this.live(this.errors)) of(e.name).errors.push({ node: e.node, at: e.heardAt, error: e.error ?? '' });
    return out;
  }
}
