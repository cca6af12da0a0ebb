/**
 * What survives a restart of the service: releases, deployment history, the last failure, the pending
 * slot, delivery ids already seen, the running app's pid. One document in the plugin's store, written
 * after every change (writes are serialised).
 */
import type { Datastore } from '../../core/plugin-api.ts';
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
}

export interface InProgress {
  attempt: number;
  commit: string | null;
  dir: string | null;
  log_file: string;
  started_at: string;
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
  app_pid: number | null;
}

const HISTORY = 50;
const DELIVERIES = 1000;

export function emptyState(): State {
  return { seq: 0, attempts: 0, current: null, releases: [], history: [], last_failed: null, failed_count: 0, deliveries: [], pending: null, in_progress: null, app_pid: null };
}

export class StateStore {
  state: State = emptyState();
  private writing: Promise<unknown> = Promise.resolve();

  constructor(private readonly db: Datastore) {}

  async load(): Promise<State> {
    const doc = (await this.db.findOne({ _id: 'deployer' })) as (State & { _id: string }) | null;
    if (doc) {
      const { _id, ...rest } = doc;
      this.state = { ...emptyState(), ...rest };
    }
    return this.state;
  }

  /** Persist the current state (queued behind earlier writes; failures are returned, not thrown). */
  save(): Promise<unknown> {
    const s = this.state;
    if (s.history.length > HISTORY) s.history.length = HISTORY;
    if (s.deliveries.length > DELIVERIES) s.deliveries.splice(0, s.deliveries.length - DELIVERIES);
    const snapshot = structuredClone(s);
    this.writing = this.writing.then(() => this.db.update({ _id: 'deployer' }, { _id: 'deployer', ...snapshot }, { upsert: true })).catch((e) => e);
    return this.writing;
  }

  currentRelease(): Release | undefined {
    return this.state.releases.find((r) => r.id === this.state.current);
  }
}
