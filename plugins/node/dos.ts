/**
 * The node's DOS counter (spec: DOS state): 0 upward, banned when it reaches 10 (one threshold, the
 * spec's). Increments come with the reason that becomes `dosMessage`; a passing check resets it to 0. Kept
 * in the node's store so a restart does not clear a ban; every change is published as `dos:changed`.
 */
import type { Collection, Events } from '../../core/plugin-api.ts';

export const DOS_BAN = 10;

export interface DosState {
  dosState: number;
  dosMessage: string | null;
}

export function createDos(store: Collection, events: Events) {
  let state: DosState = { dosState: 0, dosMessage: null };
  const loaded = store.findOne({ _id: 'dos' }).then((d) => {
    if (d) state = { dosState: Number(d.dosState) || 0, dosMessage: d.dosMessage ?? null };
  });
  async function save() {
    await store.update({ _id: 'dos' }, { _id: 'dos', ...state }, { upsert: true });
    events.emit('dos:changed', state);
  }
  return {
    async get(): Promise<DosState> {
      await loaded;
      return { ...state };
    },
    async add(amount: number, reason: string): Promise<DosState> {
      await loaded;
      const n = Math.round((state.dosState + amount) * 100) / 100;
      state = { dosState: n, dosMessage: n >= DOS_BAN ? `Node is banned (DOS ${n}): ${reason}` : reason };
      await save();
      return { ...state };
    },
    async reset(): Promise<void> {
      await loaded;
      if (state.dosState === 0 && state.dosMessage === null) return;
      state = { dosState: 0, dosMessage: null };
      await save();
    },
  };
}
