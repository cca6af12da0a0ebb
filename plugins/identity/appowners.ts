/**
 * Application owners for the appowner levels, until an apps plugin registers its own lookup: the
 * identity store's `appowners` collection, one document `{ appname, owner }` per application (owner =
 * the wallet id that registered it). Names are matched exactly (never as a pattern).
 */
import type { Collection } from '../../core/plugin-api.ts';

export interface AppOwnerRecord {
  _id?: string;
  appname: string;
  owner: string;
}

export class AppOwners {
  constructor(private readonly store: Collection<AppOwnerRecord>) {}

  init(): Promise<void> {
    return this.store.ensureIndex({ fieldName: 'appname', unique: true });
  }

  async get(appname: string): Promise<string | null> {
    if (typeof appname !== 'string' || !appname) return null;
    return (await this.store.findOne({ appname }))?.owner ?? null;
  }

  async set(appname: string, owner: string): Promise<void> {
    await this.store.update({ appname }, { appname, owner }, { upsert: true });
  }

  async remove(appname: string): Promise<void> {
    await this.store.remove({ appname }, {});
  }
}
