/**
 * What survives a restart of the service: releases, deployment history, the last failure, the pending
 * slot, delivery ids already seen, the running app's pid.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Command } from './proc.ts';
import type { DeployRequest } from './queue.ts';

export interface Release {
  /** `<3-digit sequence>-<full sha>`. */
  id: string;
  seq: number;
  commit: string;
  commit_message: string;
  build_duration_seconds: number;
  deployed_at: string;
  dir: string;
  /** The app's folder (PROJECT_PATH inside `dir`); older states have none (= dir). */
  app_dir?: string;
  project_type: string;
  serve_type: string;
  run: Command;
  env: Record<string, string>;
  lock_hash: string | null;
  deps_dirs: string[];
  log_file: string;
}

export interface Deployment {
  /** Attempt number (every deployment, failed or not). */
  attempt: number;
  status: 'success' | 'failed';
  commit: string | null;
  commit_message: string;
  release_id?: string;
  seq?: number;
  reason?: string;
  detail?: string;
  project_type?: string;
  serve_type?: string;
  started_at: string;
  finished_at: string;
  duration_seconds: number;
  stages: Array<{ stage: string; seconds: number }>;
  log_file: string;
  delivery_id: string;
  provider: string;
}

export interface FailedDeployment {
  commit: string;
  commit_full: string;
  failed_at: string;
  reason: string;
  /** The /logs identifier of its build log (`<commit>-FAILED`, or `attempt-<n>-FAILED` before the commit was known). */
  log?: string;
}

export interface InProgress {
  attempt: number;
  commit: string | null;
  dir: string | null;
  log_file: string;
  started_at: string;
  /** Deployed again after a crash of the service (unless a newer request waits). */
  request?: DeployRequest;
  /** Process group of the install / build / hook step running (stopped after a crash). */
  pgid?: number | null;
}

export interface State {
  seq: number;
  attempts: number;
  current: string | null;
  releases: Release[];
  history: Deployment[];
  last_failed: FailedDeployment | null;
  failed_count: number;
  deliveries: string[];
  pending: DeployRequest | null;
  in_progress: InProgress | null;
}

const HISTORY = 50;
const DELIVERIES = 1000;

export function emptyState(): State {
  return { seq: 0, attempts: 0, current: null, releases: [], history: [], last_failed: null, failed_count: 0, deliveries: [], pending: null, in_progress: null };
}

/**
 * The state as one JSON file, replaced atomically (temp file, fsync, rename) so a crash leaves the old or
 * the new version, never a mix. Saves requested while one is waiting are merged into it.
 */
export class StateStore {
  state: State = emptyState();
  private writing: Promise<void> = Promise.resolve();
  private queued: Promise<void> | null = null;

  constructor(private readonly file: string) {}

  load(): State {
    let text: string;
    try {
      text = fs.readFileSync(this.file, 'utf8');
    } catch {
      return this.state; // first start
    }
    try {
      this.state = { ...emptyState(), ...JSON.parse(text) };
    } catch (e) {
      throw new Error(`${this.file} is not valid JSON (${(e as Error).message}); move it away to start with an empty history`);
    }
    return this.state;
  }

  /** Persist the current state; resolves once a write that includes every change made so far is on disk. */
  save(): Promise<void> {
    if (this.queued) return this.queued;
    const next = this.writing.then(() => {
      this.queued = null;
      return this.write();
    });
    this.queued = next;
    this.writing = next.catch(() => {});
    return next;
  }

  private async write(): Promise<void> {
    const s = this.state;
    if (s.history.length > HISTORY) s.history.length = HISTORY;
    if (s.deliveries.length > DELIVERIES) s.deliveries.splice(0, s.deliveries.length - DELIVERIES);
    const tmp = `${this.file}.tmp`;
    await fsp.mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    const fh = await fsp.open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(JSON.stringify(s));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, this.file);
  }

  currentRelease(): Release | undefined {
    return this.state.releases.find((r) => r.id === this.state.current);
  }
}
