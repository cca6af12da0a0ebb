/**
 * Where apps run, install and failed to install, as the nodes' notices say. A node announces all the apps
 * it runs in one `apprunning` notice (at start, on change, and every `announceMs`); an entry older than
 * `ttlMs` is gone (its node stopped announcing), an `appremoved` notice drops it at once.
 */
import type { AppLocation } from './api.ts';

export interface RunningNotice {
  ip: string;
  apps: { name: string; hash: string; runningSince: number }[];
}

export interface InstallingLocation {
  name: string;
  ip: string;
  node: string;
  broadcastedAt: number;
  error?: string;
}

const NAME = /^[a-zA-Z0-9_-]{1,128}$/;

export class Locations {
  private readonly running = new Map<string, Map<string, AppLocation>>();
  private readonly installing = new Map<string, Map<string, InstallingLocation>>();
  private readonly errors = new Map<string, Map<string, InstallingLocation>>();
  /** Every node heard from by a running notice, with the place it announced. */
  private readonly nodeInfo = new Map<string, { node: string; ip: string; place: any; broadcastedAt: number }>();

  constructor(private readonly now: () => number, private readonly ttlMs: number) {}

  /** Apply one notice; false when its payload is not one. */
  apply(type: string, payload: any, node: string, sentAt: number): boolean {
    if (!payload || typeof payload !== 'object' || typeof payload.ip !== 'string' || payload.ip.length > 64) return false;
    if (type === 'apprunning') {
      if (!Array.isArray(payload.apps) || payload.apps.length > 1000) return false;
      const place = payload.place && typeof payload.place === 'object' && !Array.isArray(payload.place) && typeof payload.place.tier === 'string' ? payload.place : null;
      const before = this.nodeInfo.get(node);
      if (!before || before.broadcastedAt <= sentAt) this.nodeInfo.set(node, { node, ip: payload.ip, place, broadcastedAt: sentAt });
      // The notice lists every app the node runs: apps it no longer lists are no longer there.
      for (const m of this.running.values()) {
        const cur = m.get(node);
        if (cur && cur.broadcastedAt <= sentAt) m.delete(node);
      }
      for (const a of payload.apps) {
        if (!a || typeof a.name !== 'string' || !NAME.test(a.name) || typeof a.hash !== 'string' || a.hash.length > 128) continue;
        this.at(this.running, a.name).set(node, { name: a.name, hash: a.hash, ip: payload.ip, node, broadcastedAt: sentAt, runningSince: Number(a.runningSince) || sentAt });
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
      this.at(this.installing, name).set(node, { name, ip: payload.ip, node, broadcastedAt: sentAt });
      this.errors.get(name)?.delete(node);
      return true;
    }
    if (type === 'appinstallingerror') {
      this.installing.get(name)?.delete(node);
      this.at(this.errors, name).set(node, { name, ip: payload.ip, node, broadcastedAt: sentAt, error: String(payload.error ?? '').slice(0, 500) });
      return true;
    }
    return false;
  }

  private at<T>(m: Map<string, Map<string, T>>, name: string) {
    let x = m.get(name);
    if (!x) m.set(name, (x = new Map()));
    return x;
  }

  private list<T extends { broadcastedAt: number }>(m: Map<string, Map<string, T>>, name?: string): T[] {
    const cut = this.now() - this.ttlMs;
    const out: T[] = [];
    for (const [app, nodes] of m) {
      if (name !== undefined && app !== name) continue;
      for (const [k, v] of nodes) {
        if (v.broadcastedAt < cut) nodes.delete(k);
        else out.push(v);
      }
    }
    return out.sort((a, b) => a.broadcastedAt - b.broadcastedAt);
  }

  nodes() {
    const cut = this.now() - this.ttlMs;
    for (const [k, v] of this.nodeInfo) if (v.broadcastedAt < cut) this.nodeInfo.delete(k);
    return [...this.nodeInfo.values()];
  }

  locations(name?: string) {
    return this.list(this.running, name);
  }
  installingLocations(name?: string) {
    return this.list(this.installing, name);
  }
  errorLocations(name?: string) {
    return this.list(this.errors, name);
  }
}
