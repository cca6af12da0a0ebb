/**
 * Which store holds the index (config `explorer.store`), and the way off the nedb index of earlier versions.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PgExplorerStore } from './pg-store.ts';
import { SqliteExplorerStore } from './sqlite-store.ts';
import type { ExplorerStore } from './store.ts';

export type StoreConfig = { kind: 'embedded'; path?: string; cacheMb?: number } | { kind: 'postgres'; url: string; poolSize?: number };

export const storeConfigSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['kind'],
  properties: {
    kind: { enum: ['embedded', 'postgres'] },
    // embedded: the SQLite file (default <dataDir>/explorer/index.sqlite); its page cache in MB.
    path: { type: 'string', minLength: 1 },
    cacheMb: { type: 'integer', minimum: 2, maximum: 4096 },
    // postgres: a connection URL; connections kept.
    url: { type: 'string', pattern: '^postgres(ql)?://' },
    poolSize: { type: 'integer', minimum: 2, maximum: 64 },
  },
  if: { properties: { kind: { const: 'postgres' } } },
  then: { required: ['url'] },
  default: { kind: 'embedded' },
};

interface Log {
  warn(obj: object, msg?: string): void;
}

/** The nedb index an earlier version kept: `<dataDir>/explorer/index.db`. */
export const legacyIndexFile = (dataDir: string) => path.join(dataDir, 'explorer', 'index.db');

/**
 * An nedb explorer index from an earlier version is not converted (it may be half a gigabyte of JSON lines
 * that take minutes to load): the new store is built from the daemon from the start height, and the old
 * file is removed once that is said in the log.
 */
export function retireLegacyIndex(dataDir: string, log: Log): boolean {
  const file = legacyIndexFile(dataDir);
  if (!fs.existsSync(file)) return false;
  const mb = (fs.statSync(file).size / 2 ** 20).toFixed(0);
  log.warn(
    { file, sizeMb: Number(mb) },
    'explorer: found the nedb index of an earlier version; it is not read: the index is rebuilt from the daemon from the start height into the new store, and the old file is removed',
  );
  fs.rmSync(file, { force: true });
  fs.rmSync(`${file}~`, { force: true });
  return true;
}

export function createStore(cfg: StoreConfig, dataDir: string, undoDepth: number): ExplorerStore {
  if (cfg.kind === 'postgres') return new PgExplorerStore({ url: cfg.url, undoDepth, poolSize: cfg.poolSize });
  const file = cfg.path ? path.resolve(dataDir, cfg.path) : path.join(dataDir, 'explorer', 'index.sqlite');
  return new SqliteExplorerStore(file, { undoDepth, cacheMb: cfg.cacheMb });
}

/** The store kind and where it is, for the log (no password). */
export function describeStore(cfg: StoreConfig, dataDir: string): object {
  if (cfg.kind === 'postgres') {
    const u = new URL(cfg.url);
    return { kind: 'postgres', host: u.host || u.searchParams.get('host'), database: u.pathname.slice(1) };
  }
  return { kind: 'embedded', file: cfg.path ? path.resolve(dataDir, cfg.path) : path.join(dataDir, 'explorer', 'index.sqlite') };
}
