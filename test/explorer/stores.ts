/**
 * The stores the explorer tests run against: the embedded SQLite store and PostgreSQL (a real server,
 * started for the suite). The store contract (store.test.ts, and scanner.test.ts on a real chain: reorgs,
 * crashes at every write step) runs on every kind of `storeKinds()`; `EXPLORER_STORES=sqlite` (or
 * `postgres`) runs one of them. The suites of the node's routes and process (routes, kill -9) test the
 * node above the contract and run once, on `nodeStoreKind()`: the default store (SQLite), or
 * `EXPLORER_NODE_STORE=postgres`.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { PgExplorerStore } from '../../plugins/explorer/pg-store.ts';
import { SqliteExplorerStore } from '../../plugins/explorer/sqlite-store.ts';
import type { ExplorerStore, Fault } from '../../plugins/explorer/store.ts';
import { tempDir } from '../support/node.ts';
import { startPostgres, type Postgres } from './postgres.ts';

export interface StoreOptions {
  undoDepth?: number;
  /** A simulated crash (data: it crosses to the store's writer thread). */
  fault?: Fault;
  /** The most rows the store's writer puts in one transaction. */
  rowsPerTransaction?: number;
  /** The store's writer thread from the TypeScript sources through tsx, not from dist/. */
  writerFromSources?: boolean;
}

export interface StoreKind {
  readonly name: 'sqlite' | 'postgres';
  /** Start what the store needs (PostgreSQL: a server); `teardown` stops it and closes every store made. */
  setup(): Promise<void>;
  teardown(): Promise<void>;
  /** A store over the index called `name`: the same name is the same data, as after a restart. */
  make(name: string, opts?: StoreOptions): Promise<ExplorerStore>;
  /** Copy index `from` to `to` (stores open on `from` are closed first). */
  copy(from: string, to: string): Promise<void>;
  /** The node's `explorer.store` section for index `name`. */
  nodeConfig(name: string): Record<string, unknown>;
  /** Run SQL on index `name` behind the store's back (stores open on it are closed first); `table` maps a bare table name to this kind's. */
  sql(name: string, statements: (table: (t: string) => string) => string): Promise<void>;
}

class SqliteKind implements StoreKind {
  readonly name = 'sqlite' as const;
  private dir = '';
  private readonly made: ExplorerStore[] = [];
  async setup() {
    this.dir = tempDir('explorer-sqlite-');
  }
  async teardown() {
    for (const s of this.made.splice(0)) await s.close();
    if (this.dir) fs.rmSync(this.dir, { recursive: true, force: true });
  }
  private file(name: string) {
    return path.join(this.dir, `${name}.sqlite`);
  }
  async make(name: string, opts: StoreOptions = {}) {
    const s = new SqliteExplorerStore(this.file(name), { undoDepth: opts.undoDepth ?? 1000, fault: opts.fault, rowsPerTransaction: opts.rowsPerTransaction, writerFromSources: opts.writerFromSources });
    this.made.push(s);
    return s;
  }
  async copy(from: string, to: string) {
    const db = new Database(this.file(from), { readonly: true });
    try {
      db.exec(`VACUUM INTO '${this.file(to)}'`);
    } finally {
      db.close();
    }
  }
  nodeConfig(name: string) {
    return { kind: 'embedded', path: this.file(name) };
  }
  async sql(name: string, statements: (table: (t: string) => string) => string) {
    const db = new Database(this.file(name));
    try {
      db.exec(statements((t) => t));
    } finally {
      db.close();
    }
  }
}

class PostgresKind implements StoreKind {
  readonly name = 'postgres' as const;
  private server: Postgres | null = null;
  private readonly made = new Map<string, ExplorerStore[]>();
  private readonly dbs = new Set<string>();
  async setup() {
    this.server = await startPostgres();
  }
  async teardown() {
    for (const list of this.made.values()) for (const s of list) await s.close().catch(() => {});
    this.made.clear();
    await this.server?.stop();
  }
  private db(name: string) {
    return `idx_${name.replace(/[^a-z0-9]/gi, '_').toLowerCase()}`;
  }
  private async ensure(name: string) {
    if (this.dbs.has(name)) return;
    await this.server!.createDatabase(this.db(name));
    this.dbs.add(name);
  }
  async make(name: string, opts: StoreOptions = {}) {
    await this.ensure(name);
    const s = new PgExplorerStore({ url: this.server!.url(this.db(name)), undoDepth: opts.undoDepth ?? 1000, fault: opts.fault, rowsPerTransaction: opts.rowsPerTransaction, writerFromSources: opts.writerFromSources });
    if (!this.made.has(name)) this.made.set(name, []);
    this.made.get(name)!.push(s);
    return s;
  }
  async copy(from: string, to: string) {
    // A template database must have no sessions.
    for (const s of this.made.get(from) ?? []) await s.close();
    this.made.delete(from);
    await this.server!.createDatabase(this.db(to), this.db(from));
    this.dbs.add(to);
  }
  nodeConfig(name: string) {
    return { kind: 'postgres', url: this.server!.url(this.db(name)) };
  }
  async sql(name: string, statements: (table: (t: string) => string) => string) {
    const c = new pg.Client({ connectionString: this.server!.url(this.db(name)) });
    await c.connect();
    try {
      await c.query(statements((t) => `explorer_${t}`));
    } finally {
      await c.end();
    }
  }
  /** For node tests: the database must exist before the node opens it. */
  async prepare(name: string) {
    await this.ensure(name);
  }
}

/** The store under the node-level suites (routes, kill -9): the default one unless EXPLORER_NODE_STORE names another. */
export function nodeStoreKind(): StoreKind {
  return process.env.EXPLORER_NODE_STORE === 'postgres' ? new PostgresKind() : new SqliteKind();
}

export function storeKinds(): StoreKind[] {
  const want = (process.env.EXPLORER_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  const all: StoreKind[] = [new SqliteKind(), new PostgresKind()];
  return all.filter((k) => want.includes(k.name));
}

/** Make sure index `name` can be opened by a node (PostgreSQL: its database exists). */
export async function prepareIndex(kind: StoreKind, name: string): Promise<void> {
  if (kind instanceof PostgresKind) await kind.prepare(name);
}
