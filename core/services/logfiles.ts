/**
 * The node's own log files, next to the structured stdout: `error.log`, `warn.log`, `info.log` and
 * `debug.log` under `<dataDir>/logs/`, one file per level (fatal goes to error.log, trace to debug.log), each
 * line `<ISO time>          <message> <other fields as JSON>` (facts §4.4: ISO time, ten spaces, message).
 * A file that would pass `maxBytes` is rotated to `<name>.1` (the previous `.1` is dropped), so the logs
 * never fill the disk. Writes are buffered streams: logging never blocks a request on the disk.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pino, type Logger } from 'pino';

export const LOG_FILES = ['error', 'warn', 'info', 'debug'] as const;
export type LogFileName = (typeof LOG_FILES)[number];

/** pino's numeric levels to the file a line goes to. */
function fileOf(level: number): LogFileName {
  if (level >= 50) return 'error';
  if (level >= 40) return 'warn';
  if (level >= 30) return 'info';
  return 'debug';
}

const DROPPED = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

/** One pino JSON line as a log file line. */
export function formatLine(json: string): { file: LogFileName; line: string } | null {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(json);
  } catch {
    return null;
  }
  const time = typeof rec.time === 'number' ? new Date(rec.time).toISOString() : new Date().toISOString();
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(rec)) if (!DROPPED.has(k)) rest[k] = v;
  const extra = Object.keys(rest).length ? ` ${JSON.stringify(rest)}` : '';
  return { file: fileOf(Number(rec.level)), line: `${time}          ${rec.msg ?? ''}${extra}\n` };
}

interface OpenFile {
  stream: fs.WriteStream;
  size: number;
}

/** A pino destination (anything with `write(line)`) that writes the level files. */
export class LogFiles {
  private readonly open = new Map<LogFileName, OpenFile>();

  constructor(
    readonly dir: string,
    private readonly maxBytes: number,
  ) {
    fs.mkdirSync(dir, { recursive: true });
  }

  pathOf(name: LogFileName): string {
    return path.join(this.dir, `${name}.log`);
  }

  write(json: string): boolean {
    const out = formatLine(json);
    if (!out) return true;
    const bytes = Buffer.byteLength(out.line);
    let f = this.open.get(out.file);
    if (!f) f = this.openFile(out.file);
    if (f.size > 0 && f.size + bytes > this.maxBytes) f = this.rotate(out.file, f);
    f.size += bytes;
    f.stream.write(out.line);
    return true;
  }

  private openFile(name: LogFileName): OpenFile {
    const file = this.pathOf(name);
    let size = 0;
    try {
      size = fs.statSync(file).size;
    } catch {
      /* a new file */
    }
    const stream = fs.createWriteStream(file, { flags: 'a' });
    // A full disk or a removed folder must not crash the node: the stdout log goes on.
    stream.on('error', () => this.open.delete(name));
    const f = { stream, size };
    this.open.set(name, f);
    return f;
  }

  /** The open stream keeps writing its queued lines into the renamed file; new lines go to a fresh one. */
  private rotate(name: LogFileName, f: OpenFile): OpenFile {
    const file = this.pathOf(name);
    try {
      fs.renameSync(file, `${file}.1`);
    } catch {
      /* already gone: start afresh */
    }
    f.stream.end();
    this.open.delete(name);
    const next = this.openFile(name);
    next.size = 0;
    return next;
  }

  /** Flush and close every file (the host's close). */
  async close(): Promise<void> {
    const ends = [...this.open.values()].map((f) => new Promise<void>((r) => f.stream.end(r)));
    this.open.clear();
    await Promise.all(ends);
  }
}

const RANK: Record<string, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

/**
 * The host's logger: stdout at `log.level`, the level files at `log.files.level`; the logger itself runs at
 * the lower of the two, so a silent stdout (tests) still fills the files.
 */
export function createNodeLogger(config: { dataDir: string; listener: string; log: { level: string; files?: { level: string; maxBytes: number } } }): {
  logger: Logger;
  files?: LogFiles;
} {
  const { level, files: f = { level: 'info', maxBytes: 25 * 1024 * 1024 } } = config.log;
  const base = { listener: config.listener };
  if (f.level === 'silent') return { logger: pino({ level, base }) };
  const files = new LogFiles(path.join(config.dataDir, 'logs'), f.maxBytes);
  const lowest = RANK[level] <= RANK[f.level] ? level : f.level;
  const streams = [{ level: f.level as pino.Level, stream: files }];
  if (level !== 'silent') streams.push({ level: level as pino.Level, stream: pino.destination(1) as unknown as LogFiles });
  return { logger: pino({ level: lowest, base }, pino.multistream(streams)), files };
}
