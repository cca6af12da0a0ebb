/**
 * Build logs (spec: Build log; GET /logs/:identifier; facts §3): one file per deployment under
 * `<DEPLOY_ROOT>/logs/`, `<release id>.log` for a release, `<commit>-FAILED.log` for a failed build.
 * Identifiers are resolved against the deployment history only, so a request never names a file.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Deployment } from './state.ts';

/** A build log keeps at most this much: above it, the oldest output is cut (the tail is what explains a failure). */
export const MAX_BUILD_LOG_BYTES = 2 * 1024 * 1024;

/**
 * The log of the deployment being made; renamed to its final name at the end. Writes are synchronous
 * appends (ordered with the stage lines), passed through `redact` (credentials never reach a log), and
 * the file is bounded: past MAX_BUILD_LOG_BYTES it is cut to its last half, with a line saying so.
 */
export class BuildLog {
  readonly file: string;
  private fd: number | null;
  private size = 0;
  private cut = 0;
  readonly stream: Writable;

  constructor(
    private readonly dir: string,
    attempt: number,
    private readonly redact: (s: string) => string = (s) => s,
    private readonly max = MAX_BUILD_LOG_BYTES,
  ) {
    fs.mkdirSync(dir, { recursive: true });
    this.file = `build_${attempt}.log`;
    this.fd = fs.openSync(path.join(dir, this.file), 'w+', 0o600);
    this.stream = new Writable({
      write: (chunk: Buffer, _enc, cb) => {
        this.append(chunk.toString('utf8'));
        cb();
      },
    });
  }

  private append(text: string): void {
    if (this.fd === null) return;
    const buf = Buffer.from(this.redact(text));
    try {
      // Positioned writes: after a cut the file offset of the descriptor is not the end of the log.
      fs.writeSync(this.fd, buf, 0, buf.length, this.size);
    } catch {
      return; // disk full: the deployment goes on, the log loses lines
    }
    this.size += buf.length;
    if (this.size > this.max) this.compact();
  }

  /** Keep the last half of the cap, behind a line that says how much was cut. */
  private compact(): void {
    const fd = this.fd!;
    const keep = Math.floor(this.max / 2);
    const tail = Buffer.alloc(keep);
    fs.readSync(fd, tail, 0, keep, this.size - keep);
    // Start at a line boundary so the kept part has no torn first line.
    const nl = tail.indexOf(10);
    const body = nl >= 0 && nl < keep - 1 ? tail.subarray(nl + 1) : tail;
    this.cut += this.size - body.length;
    const mark = Buffer.from(`[... ${this.cut} bytes of earlier output cut: build logs keep their last ${Math.round(keep / 1024)} KiB ...]\n`);
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, mark, 0, mark.length, 0);
    fs.writeSync(fd, body, 0, body.length, mark.length);
    this.size = mark.length + body.length;
  }

  line(text: string): void {
    this.append(`[${new Date().toISOString()}] ${text}\n`);
  }

  section(title: string): void {
    this.append(`\n=== ${title} ===\n`);
  }

  /** Close and move to `name` (replacing an older log of that name); returns the name. */
  async finish(name: string): Promise<string> {
    if (this.fd !== null) {
      fs.closeSync(this.fd);
      this.fd = null;
    }
    fs.renameSync(path.join(this.dir, this.file), path.join(this.dir, name));
    return name;
  }
}

/**
 * Identifier forms: `1` / `001` (sequence), `001-<sha>` (release id), `<sha>` full or 7+ characters
 * (a release, else a failed build), `<sha>-FAILED`, `attempt-<n>` (any attempt, also one that failed
 * before its commit was known). History is newest first, so the newest match wins.
 */
export function findDeployment(history: Deployment[], identifier: string): Deployment | undefined {
  const ok = history.filter((d) => d.status === 'success');
  const failed = history.filter((d) => d.status === 'failed');
  const byCommit = (list: Deployment[], prefix: string) => list.find((d) => d.commit?.startsWith(prefix.toLowerCase()));
  let m: RegExpExecArray | null;
  if (/^\d{1,6}$/.test(identifier)) return ok.find((d) => d.seq === Number(identifier));
  if ((m = /^(\d{1,6})-([0-9a-f]{7,64})$/i.exec(identifier))) {
    const seq = Number(m[1]);
    return ok.find((d) => d.seq === seq && d.commit?.startsWith(m![2].toLowerCase()));
  }
  if ((m = /^([0-9a-f]{7,64})-FAILED$/i.exec(identifier))) return byCommit(failed, m[1]);
  // A deployment that failed before its commit was known (git fetch refused): `attempt-<n>[-FAILED]`.
  if ((m = /^attempt-(\d{1,9})(?:-FAILED)?$/i.exec(identifier))) return history.find((d) => d.attempt === Number(m![1]));
  if (/^[0-9a-f]{7,64}$/i.test(identifier)) return byCommit(ok, identifier) ?? byCommit(failed, identifier);
  return undefined;
}

export function readLog(dir: string, d: Deployment): string | null {
  return readLogFile(dir, d.log_file);
}

export function readLogFile(dir: string, file: string): string | null {
  try {
    return fs.readFileSync(path.join(dir, path.basename(file)), 'utf8');
  } catch {
    return null;
  }
}

/** `latest` when no deployment runs: the identifier of the newest finished one (history is newest first). */
export function latestOf(history: Deployment[]): string {
  return history[0] ? `attempt-${history[0].attempt}` : '';
}

/** Lines of a log, without the empty string a final newline leaves; the last `tail` of them when asked. */
export function logLines(content: string, tail?: number): string[] {
  const lines = content.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  return tail !== undefined ? lines.slice(Math.max(0, lines.length - tail)) : lines;
}

export function metadata(d: Deployment): Record<string, unknown> {
  return {
    commit: d.commit ?? '',
    project_type: d.project_type ?? null,
    serve_type: d.serve_type ?? null,
    build_duration: d.duration_seconds,
    build_timestamp: d.finished_at,
    build_log_file: d.log_file,
    build_status: d.status,
    ...(d.reason ? { reason: d.reason } : {}),
  };
}

/** Text format: `=== Build Metadata ===`, pretty JSON, a blank line, `=== Build Log ===`, the log. */
export function renderText(d: Deployment, lines: string[]): string {
  return `=== Build Metadata ===\n${JSON.stringify(metadata(d), null, 2)}\n\n=== Build Log ===\n${lines.join('\n')}\n`;
}

/** The text format of the log of a deployment still running: its metadata says so (`build_status: running`). */
export function renderRunning(r: { commit: string | null; log_file: string; started_at: string; stage: string }, lines: string[]): string {
  const meta = { commit: r.commit ?? '', build_status: 'running', stage: r.stage, build_started: r.started_at, build_log_file: r.log_file };
  return `=== Build Metadata ===\n${JSON.stringify(meta, null, 2)}\n\n=== Build Log ===\n${lines.join('\n')}\n`;
}

/** Delete build logs no history entry names any more (history is bounded). */
export function pruneLogs(dir: string, history: Deployment[], keep: string[] = []): void {
  const named = new Set([...history.map((d) => d.log_file), ...keep]);
  let files: string[];
  try {
    files = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const f of files) {
    if (!f.endsWith('.log') || f.startsWith('app.log') || f === 'hooks.log' || named.has(f)) continue;
    fs.rmSync(path.join(dir, f), { force: true });
  }
}
