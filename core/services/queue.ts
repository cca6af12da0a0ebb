/**
 * Long-running operations: a route declared `operation: true` answers 202 at once and its handler runs here.
 * States: Running, then Succeeded, Failed (with an RFC 9457 problem), Canceled (the caller asked, and the
 * worker reached a checkpoint) or Evicted (the node took the work away: shutdown, restart). Records persist,
 * so a job that was running when the node stopped reads as Evicted afterwards. Unknown, expired and
 * not-owned jobs are all "not found".
 */
import { randomUUID } from 'node:crypto';
import PQueue from 'p-queue';
import { ApiError } from '../http/reply.ts';
import type { Datastore } from './store.ts';
import type { Clock, Operations } from '../plugin-api.ts';

export type OperationStatus = 'Running' | 'Succeeded' | 'Failed' | 'Canceled' | 'Evicted';

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
}

export interface Operation {
  jobId: string;
  statusUrl: string;
  status: OperationStatus;
  owner: string;
  kind: string;
  createdAt: number;
  finishedAt?: number;
  result?: unknown;
  error?: Problem;
  /** What the worker last reported (`progress()`), while it runs and after. */
  progress?: unknown;
}

export interface WorkControl {
  signal: AbortSignal;
  /** Throws when cancellation was asked; call it between steps that leave things consistent. */
  checkpoint(): void;
  /** Report where the work is; polls show it as `progress`. */
  progress(p: unknown): void;
}

export class CanceledError extends Error {
  constructor() {
    super('The operation was canceled');
  }
}

interface Live {
  op: Operation;
  abort: AbortController;
  cancelRequested: boolean;
}

export class OperationsService implements Operations {
  private readonly live = new Map<string, Live>();
  private readonly finished = new Map<string, Operation>();
  private readonly pq: PQueue;
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly store: Datastore | null,
    private readonly clock: Clock,
    private readonly opts: { concurrency: number; retentionMs: number },
  ) {
    this.pq = new PQueue({ concurrency: opts.concurrency });
  }

  /** Load finished records and mark work left running by a previous process as Evicted. */
  async init(): Promise<void> {
    if (this.store) {
      const now = this.clock.now();
      for (const doc of (await this.store.find({})) as (Operation & { _id: string })[]) {
        const { _id, ...op } = doc;
        if (op.status === 'Running') {
          op.status = 'Evicted';
          op.finishedAt = now;
          op.error = problem(op.jobId, 503, 'Evicted', 'The node restarted while the operation ran');
          await this.persist(op);
        }
        this.finished.set(op.jobId, op);
      }
    }
    this.sweeper = setInterval(() => void this.sweep(), 60_000);
    this.sweeper.unref();
  }

  /** Start work for `owner`; returns the Running record at once. */
  start(owner: string, kind: string, work: (ctl: WorkControl) => Promise<unknown>): Operation {
    const jobId = randomUUID();
    const op: Operation = { jobId, statusUrl: `/apps/operations/${jobId}`, status: 'Running', owner, kind, createdAt: this.clock.now() };
    const entry: Live = { op, abort: new AbortController(), cancelRequested: false };
    this.live.set(jobId, entry);
    void this.persist(op);
    const ctl: WorkControl = {
      signal: entry.abort.signal,
      checkpoint: () => {
        if (entry.cancelRequested) throw new CanceledError();
      },
      progress: (p) => {
        entry.op.progress = p;
      },
    };
    void this.pq
      .add(async () => {
        ctl.checkpoint(); // canceled while still queued
        return work(ctl);
      })
      .then(
        (result) => this.finish(entry, 'Succeeded', { result }),
        (err) => {
          if (entry.cancelRequested) return this.finish(entry, 'Canceled', {});
          if (op.status !== 'Running') return; // already evicted
          const status = err instanceof ApiError && typeof err.code === 'number' && err.code >= 400 && err.code < 600 ? err.code : 500;
          const title = err instanceof ApiError ? err.name : 'OperationFailed';
          const detail = err instanceof ApiError ? err.message : 'The operation failed; the node logged the cause';
          return this.finish(entry, 'Failed', { error: problem(jobId, status, title, detail) });
        },
      );
    return { ...op };
  }

  /** The record if `owner` started it and it has not expired; otherwise null (all answer 404). */
  get(jobId: string, owner: string | undefined): Operation | null {
    const op = this.live.get(jobId)?.op ?? this.finished.get(jobId);
    if (!op || !owner || op.owner !== owner) return null;
    if (op.finishedAt !== undefined && this.clock.now() - op.finishedAt > this.opts.retentionMs) return null;
    return { ...op };
  }

  /** Raise the cancel flag; the status stays Running until the worker reaches a checkpoint. */
  cancel(jobId: string, owner: string | undefined): Operation | null {
    const op = this.get(jobId, owner);
    if (!op) return null;
    const entry = this.live.get(jobId);
    if (entry) {
      entry.cancelRequested = true;
      entry.abort.abort(new CanceledError());
    }
    return op;
  }

  /** The node takes all running work away (shutdown); awaits the records. */
  async evictAll(reason = 'The node is shutting down'): Promise<void> {
    clearInterval(this.sweeper);
    this.pq.clear();
    await Promise.all(
      [...this.live.values()].map((entry) => {
        entry.abort.abort(new Error(reason));
        return this.finish(entry, 'Evicted', { error: problem(entry.op.jobId, 503, 'Evicted', reason) });
      }),
    );
  }

  private async finish(entry: Live, status: OperationStatus, extra: Partial<Operation>): Promise<void> {
    if (entry.op.status !== 'Running') return;
    Object.assign(entry.op, extra, { status, finishedAt: this.clock.now() });
    this.live.delete(entry.op.jobId);
    this.finished.set(entry.op.jobId, entry.op);
    await this.persist(entry.op);
  }

  private async persist(op: Operation): Promise<void> {
    if (!this.store) return;
    try {
      await this.store.updateOne({ jobId: op.jobId }, { ...op }, { upsert: true });
    } catch {
      // A lost record only shortens how long a poll finds it; the work itself is unaffected.
    }
  }

  private async sweep(): Promise<void> {
    const cutoff = this.clock.now() - this.opts.retentionMs;
    for (const [id, op] of this.finished) {
      if ((op.finishedAt ?? 0) < cutoff) {
        this.finished.delete(id);
        await this.store?.deleteOne({ jobId: id }, {}).catch(() => undefined);
      }
    }
  }
}

function problem(jobId: string, status: number, title: string, detail: string): Problem {
  return { type: 'about:blank', title, status, detail, instance: `/apps/operations/${jobId}` };
}
