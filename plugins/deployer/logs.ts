/**
 * Build logs (spec: Build log; GET /logs/:identifier; facts §3): one file per deployment under
 * `<DEPLOY_ROOT>/logs/`, `<release id>.log` for a release, `<commit>-FAILED.log` for a failed build.
 * Identifiers are resolved against the deployment history only, so a request never names a file.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Deployment } from './state.ts';

/** The log of the deployment being made; renamed to its final name at the end. */
export class BuildLog {
  readonly file: string;
  private readonly out: fs.WriteStream;

  constructor(
    private readonly dir: string,
    attempt: number,
  ) {
    fs.mkdirSync(dir, { recursive: true });
    this.file = `build_${attempt}.log`;
    this.out = fs.createWriteStream(path.join(dir, this.file), { flags: 'w' });
    this.out.on('error', () => {});
  }

  get stream(): fs.WriteStream {
    return this.out;
  }

  line(text: string): void {
    this.out.write(`[${new Date().toISOString()}] ${text}\n`);
  }

  section(title: string): void {
    this.out.write(`\n=== ${title} ===\n`);
  }

  /** Close and move to `name` (replacing an older log of that name); returns the name. */
  async finish(name: string): Promise<string> {
    await new Promise<void>((r) => this.out.end(() => r()));
    fs.renameSync(path.join(this.dir, this.file), path.join(this.dir, name));
    return name;
  }
}

/**
 * Identifier forms: `1` / `001` (sequence), `001-<sha>` (release id), `<sha>` full or 7+ characters
 * (a release, else a failed build), `<sha>-FAILED`. History is newest first, so the newest match wins.
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
  if (/^[0-9a-f]{7,64}$/i.test(identifier)) return byCommit(ok, identifier) ?? byCommit(failed, identifier);
  return undefined;
}

export function readLog(dir: string, d: Deployment): string | null {
  try {
    return fs.readFileSync(path.join(dir, path.basename(d.log_file)), 'utf8');
  } catch {
    return null;
  }
}

/** Lines of a log, without the empty string a final newline leaves; the last `tail` of them when asked. */
export function logLines(content: string, tail?: number): string[] {
  const lines = content.split('\n');
  if (lines.length && lines[lines.length - 1] === '') lines.pop();
  return tail !== undefined ? lines.slice(Math.max(0, lines.length - tail)) : lines;
}

export function metadata(d: Deployment): Record<string, unknown> {
  return {
    commit: d.commit,
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
    if (!f.endsWith('.log') || f.startsWith('app.log') || named.has(f)) continue;
    fs.rmSync(path.join(dir, f), { force: true });
  }
}
