/**
 * The app monitor: one sample per running component container every `intervalMs` (60 s by default),
 * kept 7 days in a SQLite file (`<dataDir>/apps/monitor.sqlite`), so the history survives a node restart
 * (the reference kept it in memory). A sample is Docker's one-shot stats reduced to what the history and
 * the resource checks use; CPU is worked out against the previous sample of the same container, so the
 * sampler never waits for Docker's own two-reading stats (a second per container).
 */
import { Periodic } from './periodic.ts';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import type { Engine } from './engine.ts';
import { diskOf } from './inside.ts';
import type { Installer } from './installer.ts';

export const KEEP_MS = 7 * 24 * 3600_000;
/** Over a day of history, every 20th sample is answered (the reference's thinning). */
export const THIN_OVER_MS = 24 * 3600_000;
export const THIN_EVERY = 20;
const BATCH = 32;

export interface Sample {
  /** CPU used, in cores (1 = one full core), over the time since the previous sample. */
  cpu: number | null;
  /** CPU used as a share of the container's nanoCpus limit (1 = at its limit). */
  cpuOfLimit: number | null;
  nanoCpus: number;
  memory: number;
  memoryLimit: number;
  netRx: number;
  netTx: number;
  blockRead: number;
  blockWrite: number;
  pids: number;
  disk: number;
  running: boolean;
  oomKilled: boolean;
  restarts: number;
}

interface Prev {
  cpuTotal: number;
  at: number;
}

export class Monitor {
  private readonly db: Database.Database;
  private readonly prev = new Map<string, Prev>();
  private readonly periodic = new Periodic(() => this.sampleAll(), (e) => {
    this.stats.failures++;
    this.log.warn({ err: e.message }, 'apps: monitor round failed');
  });
  readonly stats = { rounds: 0, samples: 0, failures: 0, lastRoundMs: 0 };
  private readonly insert: Database.Statement;
  private lastPurge = 0;

  constructor(
    file: string,
    private readonly engine: Engine,
    private readonly installer: Installer,
    private readonly now: () => number,
    private readonly log: { warn(o: object, m: string): void },
  ) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.exec('CREATE TABLE IF NOT EXISTS samples (container TEXT NOT NULL, ts INTEGER NOT NULL, data TEXT NOT NULL); CREATE INDEX IF NOT EXISTS samples_ct ON samples (container, ts);');
    this.insert = this.db.prepare('INSERT INTO samples (container, ts, data) VALUES (?, ?, ?)');
  }

  start(intervalMs: number): void {
    this.periodic.start(intervalMs);
  }

  async stop(): Promise<void> {
    await this.periodic.stop();
    this.db.close();
  }

  /** One sampling round over every installed component (running or not: a stop is history too). */
  round(): Promise<void> {
    return this.periodic.run();
  }

  private async sampleAll(): Promise<void> {
    const t0 = Date.now();
    const byName = new Map((await this.engine.listManaged()).map((c) => [c.Names[0].slice(1), c]));
    const rows: [string, number, string][] = [];
    const names: string[] = [];
    for (const rec of await this.installer.store.find({})) for (const c of rec.components) if (byName.has(c.container)) names.push(c.container);
    // Many at once: dockerd (20.10 here) answers a stats request at its collector's next 1 s tick, one-shot
    // or not (measured ~1 s each), so 50 in batches of 8 held a round open 7 s; in batches of 32, ~2 s.
    for (let i = 0; i < names.length; i += BATCH) {
      const part = await Promise.all(names.slice(i, i + BATCH).map((n) => this.sampleOne(n, byName.get(n)!.State === 'running').catch(() => null)));
      part.forEach((s, j) => s && rows.push([names[i + j], this.now(), JSON.stringify(s)]));
    }
    this.db.transaction(() => {
      for (const r of rows) this.insert.run(...r);
    })();
    this.stats.rounds++;
    this.stats.samples += rows.length;
    if (this.now() - this.lastPurge > 3600_000) {
      this.lastPurge = this.now();
      this.db.prepare('DELETE FROM samples WHERE ts < ?').run(this.now() - KEEP_MS);
    }
    this.stats.lastRoundMs = Date.now() - t0;
  }

  private async sampleOne(name: string, running: boolean): Promise<Sample> {
    const c = this.engine.container(name);
    const info = await c.inspect();
    const nanoCpus = info.HostConfig?.NanoCpus ?? 0;
    const base: Sample = { cpu: null, cpuOfLimit: null, nanoCpus, memory: 0, memoryLimit: info.HostConfig?.Memory ?? 0, netRx: 0, netTx: 0, blockRead: 0, blockWrite: 0, pids: 0, disk: 0, running, oomKilled: !!info.State?.OOMKilled, restarts: info.RestartCount ?? 0 };
    base.disk = (await diskOf(this.engine, name)).used;
    if (!running) {
      this.prev.delete(name);
      return base;
    }
    const s: any = await c.stats({ stream: false, 'one-shot': true } as any);
    const total = Number(s.cpu_stats?.cpu_usage?.total_usage ?? 0);
    const at = Date.parse(s.read) || this.now();
    const p = this.prev.get(name);
    this.prev.set(name, { cpuTotal: total, at });
    if (p && at > p.at && total >= p.cpuTotal) {
      base.cpu = (total - p.cpuTotal) / ((at - p.at) * 1e6);
      base.cpuOfLimit = nanoCpus ? (base.cpu * 1e9) / nanoCpus : null;
    }
    base.memory = Number(s.memory_stats?.usage ?? 0);
    base.memoryLimit = Number(s.memory_stats?.limit ?? base.memoryLimit);
    for (const n of Object.values<any>(s.networks ?? {})) {
      base.netRx += Number(n.rx_bytes ?? 0);
      base.netTx += Number(n.tx_bytes ?? 0);
    }
    for (const e of s.blkio_stats?.io_service_bytes_recursive ?? []) {
      if (/read/i.test(e.op)) base.blockRead += Number(e.value);
      if (/write/i.test(e.op)) base.blockWrite += Number(e.value);
    }
    base.pids = Number(s.pids_stats?.current ?? 0);
    return base;
  }

  /** Stored samples of a container over the last `rangeMs`, oldest first; over a day every 20th. */
  history(container: string, rangeMs: number): { timestamp: number; data: Sample }[] {
    const rows = this.db.prepare('SELECT ts, data FROM samples WHERE container = ? AND ts >= ? ORDER BY ts').all(container, this.now() - rangeMs) as { ts: number; data: string }[];
    const picked = rangeMs > THIN_OVER_MS ? rows.filter((_, i) => i % THIN_EVERY === 0) : rows;
    return picked.map((r) => ({ timestamp: r.ts, data: JSON.parse(r.data) }));
  }

  /** A removed app's history goes with it (a later app of that name may have another owner). */
  forget(container: string): void {
    this.prev.delete(container);
    this.db.prepare('DELETE FROM samples WHERE container = ?').run(container);
  }

  /** Test and bench hook: samples written by a caller (history across a restart without waiting minutes). */
  record(container: string, ts: number, s: Sample): void {
    this.insert.run(container, ts, JSON.stringify(s));
  }
}
