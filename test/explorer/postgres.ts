/**
 * A real PostgreSQL for the explorer tests: a throw-away cluster made by `initdb` as the `postgres` user
 * (initdb refuses root) in a temporary folder owned by that user, on a free port, its unix socket in the
 * same folder. `stop()` stops the server and removes the folder.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { atExit } from '../support/at-exit.ts';
import { freePort } from '../support/ports.ts';

export interface Postgres {
  /** URL of database `db` (created by `createDatabase`). */
  url(db: string): string;
  createDatabase(db: string, template?: string): Promise<void>;
  dropDatabase(db: string): Promise<void>;
  /** The server's process id (its backends are its children), for benchmarks that count its CPU. */
  pid(): number;
  stop(): Promise<void>;
}

/** initdb and pg_ctl: on the PATH, else in Debian's versioned folder (scripts/setup/ensure-postgres.sh). */
export function pgBin(name: string): string {
  const onPath = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
  if (onPath) return onPath;
  const root = '/usr/lib/postgresql';
  const versions = fs.existsSync(root) ? fs.readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const p = path.join(root, v, 'bin', name);
    if (fs.existsSync(p)) return p;
  }
  throw new Error(`${name} not found: run scripts/setup/ensure-postgres.sh`);
}

/** Run as the `postgres` user when this process is root (initdb and the server refuse root). */
function asPostgres(cmd: string, args: string[]): void {
  const [file, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  execFileSync(file, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
}

export async function startPostgres(opts: { durable?: boolean; settings?: string[] } = {}): Promise<Postgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'explorer-pg-'));
  const data = path.join(dir, 'data');
  if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', dir]);
  asPostgres(pgBin('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
  const log = path.join(dir, 'server.log');
  const halt = () => {
    try {
      asPostgres(pgBin('pg_ctl'), ['-D', data, '-m', 'immediate', '-w', '-t', '60', 'stop']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  };
  // The kernel chooses the port, which is free only until the server binds it, and the suite's other
  // processes bind ports meanwhile: when the server finds it taken, it starts again on another.
  let port = 0;
  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    // Tests: no fsync (a killed node, not a killed machine, is what they test). Benchmarks keep the defaults.
    const settings = [`-p ${port}`, `-k ${dir}`, `-c listen_addresses=127.0.0.1`, ...(opts.durable ? [] : ['-c fsync=off', '-c synchronous_commit=off', '-c full_page_writes=off']), ...(opts.settings ?? [])];
    try {
      asPostgres(pgBin('pg_ctl'), ['-D', data, '-l', log, '-o', settings.join(' '), '-w', '-t', '60', 'start']);
      break;
    } catch (e) {
      const taken = fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes('Address already in use');
      if (!taken || attempt === 3) {
        // A start that timed out may still have left a server running in the folder.
        try {
          halt();
        } catch {
          // none was running; the folder is gone either way
        }
        throw e;
      }
      fs.rmSync(log, { force: true });
    }
  }
  const url = (db: string) => `postgresql://postgres@127.0.0.1:${port}/${db}`;
  let stopped = false;
  // pg_ctl daemonises the server (a session of its own): Ctrl-C of the test run does not reach it.
  const forget = atExit(halt);
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: url('postgres') });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  return {
    url,
    createDatabase: (db, template) => admin(`CREATE DATABASE "${db}"${template ? ` TEMPLATE "${template}"` : ''}`),
    dropDatabase: (db) => admin(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`),
    pid: () => Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
    async stop() {
      if (stopped) return;
      stopped = true;
      forget();
      halt();
    },
  };
}
