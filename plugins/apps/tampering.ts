/**
 * Tampering events: what the node finds changed behind its back on an installed app. One record per
 * (app, kind, hour) with `count`, `firstSeen`, `lastSeen`, kept 30 days after `lastSeen`. Every value that
 * reaches the store is made a string or a number here, so a query can never carry an operator (the
 * reference passed `appname` from the request into its query as it came: `?appname[$ne]=x`).
 */
import type { Collection } from '../../core/plugin-api.ts';

export const TAMPERING_KINDS = ['image_digest_changed', 'container_vanished', 'volume_missing', 'mount_vanished', 'network_detached', 'mount_refused'] as const;
export type TamperingKind = (typeof TAMPERING_KINDS)[number];
export const TAMPERING_KEEP_MS = 30 * 24 * 3600_000;
const HOUR = 3600_000;

export interface TamperingEvent {
  _id?: string;
  app: string;
  kind: TamperingKind;
  /** Start of the hour (ms) the record counts. */
  hour: number;
  component: string;
  container: string;
  detail: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
  appHash: string;
  ownerLegacyid: string;
}

export class TamperingLog {
  private lastPurge = 0;

  constructor(
    readonly store: Collection<TamperingEvent>,
    private readonly now: () => number,
  ) {}

  async init(): Promise<void> {
    await this.store.ensureIndex({ fieldName: 'lastSeen' });
  }

  /** Count one sighting; answers true when it opened a new (app, kind, hour) record. */
  async record(e: { app: string; kind: TamperingKind; component: string; container: string; detail: string; appHash: string; owner: string }): Promise<boolean> {
    const now = this.now();
    const key = { app: String(e.app), kind: String(e.kind) as TamperingKind, hour: Math.floor(now / HOUR) * HOUR };
    const n = await this.store.update(key, { $inc: { count: 1 }, $set: { lastSeen: now, detail: String(e.detail) } }, {});
    const fresh = !n;
    if (fresh)
      await this.store.insert({ ...key, component: String(e.component), container: String(e.container), detail: String(e.detail), count: 1, firstSeen: now, lastSeen: now, appHash: String(e.appHash), ownerLegacyid: String(e.owner) });
    if (now - this.lastPurge > HOUR) {
      this.lastPurge = now;
      await this.store.remove({ lastSeen: { $lt: now - TAMPERING_KEEP_MS } }, { multi: true });
    }
    return fresh;
  }

  /** Newest first; `app` and `limit` are checked values (a string, a whole number 1-1000). */
  async list(app: string | undefined, limit: number): Promise<Omit<TamperingEvent, '_id'>[]> {
    const q = app === undefined ? {} : { app: String(app) };
    const rows = await this.store.find(q).sort({ lastSeen: -1 }).limit(limit);
    return rows.filter((r) => r.lastSeen >= this.now() - TAMPERING_KEEP_MS).map(({ _id, ...r }) => r);
  }
}
