/**
 * Looking inside a running app: logs, inspect, stats, top, changes and exec. Every lookup goes by the exact
 * container name taken from the installed record (never a pattern built from input), and the container
 * found must carry that name and the node's label of that app: Docker resolves an id prefix too, so a
 * name from input would let one owner reach another app's container.
 */
import fs from 'node:fs';
import { ApiError, reply, type Reply } from '../../core/plugin-api.ts';
import type { Engine } from './engine.ts';
import type { InstalledApp, Installer } from './installer.ts';
import { LABEL_APP, splitAppName } from './names.ts';
import { logEnvelope, newestLines, openLog } from './logstream.ts';

export interface Target {
  rec: InstalledApp;
  component: string;
  container: string;
}

const NOT_FOUND = () => new ApiError(404, 'NotFound', 'Application not found');

/** The one container an `app` or `component_app` name stands for (a bare name only for one-component apps). */
export async function resolveTarget(installer: Installer, appname: unknown): Promise<Target> {
  if (typeof appname !== 'string' || !appname) throw new ApiError(400, 'BadRequest', 'No Core App specified');
  const { app, component } = splitAppName(appname);
  const rec = await installer.installed(app);
  if (!rec) throw NOT_FOUND();
  if (!component && rec.components.length > 1)
    throw new ApiError(400, 'BadRequest', `Application ${app} has ${rec.components.length} components; name one as component_${app} (${rec.components.map((c) => `${c.name}_${app}`).join(', ')})`);
  const comp = component ? rec.components.find((c) => c.name === component) : rec.components[0];
  if (!comp) throw NOT_FOUND();
  return { rec, component: comp.name, container: comp.container };
}

/** Inspect the target's container, checking it is the one of that exact name and app. */
export async function inspectTarget(engine: Engine, t: Target) {
  const info = await engine.container(t.container).inspect();
  if (info.Name !== `/${t.container}` || info.Config?.Labels?.[LABEL_APP] !== t.rec.name) throw new ApiError(404, 'NotFound', `Container ${t.container} not found`);
  return info;
}

/** `lines`: a positive integer or `all` (the default). */
export function tailOf(lines: unknown): number | 'all' {
  if (lines === undefined || lines === null || lines === '' || lines === 'all') return 'all';
  const n = typeof lines === 'number' ? lines : Number(lines);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) throw new ApiError(400, 'BadRequest', `lines: must be a whole number 1-1000000 or 'all', got ${JSON.stringify(String(lines))}`);
  return n;
}

/** The log of the target as the success envelope, streamed from Docker to the client (logstream.ts). */
export async function logAnswer(engine: Engine, t: Target, tail: number | 'all'): Promise<Reply> {
  const info = await inspectTarget(engine, t);
  // By the id inspected: the very container whose name and label were just checked.
  const res = await openLog(engine.o.socketPath, info.Id, { tail });
  return reply(200, logEnvelope(res, !!info.Config?.Tty), { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
}

/** Characters a poll's `logs` hold at most, whatever `lineCount` says (older lines are left out, `truncated`). */
export const POLL_MAX_CHARS = 4 << 20;

/** `since` as Docker takes it (`seconds.nanoseconds`) from an ISO time or milliseconds since the epoch. */
export function sinceOf(since: unknown): { docker: string; ms: number } | undefined {
  if (since === undefined || since === '' || since === null) return undefined;
  const s = String(since);
  const ms = /^\d+(\.\d+)?$/.test(s) ? Number(s) : Date.parse(s);
  if (!Number.isFinite(ms) || ms < 0) throw new ApiError(400, 'BadRequest', `since: must be an ISO time or milliseconds since the epoch, got ${JSON.stringify(s)}`);
  // Docker's `since` is inclusive at nanosecond precision: the ISO time of the last line seen, with its
  // nanoseconds, would repeat that line, so the poll starts one nanosecond later.
  const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.(\d{1,9}))?Z$/.exec(s);
  if (iso) {
    const sec = Math.floor(Date.parse(s.replace(/\.\d+Z$/, 'Z')) / 1000);
    const ns = BigInt((iso[2] ?? '').padEnd(9, '0')) + 1n;
    return { docker: `${sec + Number(ns / 1_000_000_000n)}.${(ns % 1_000_000_000n).toString().padStart(9, '0')}`, ms };
  }
  return { docker: (ms / 1000).toFixed(3), ms };
}

/** One poll of the log: the newest `lineCount` lines after `since`, with Docker's timestamps. */
export async function pollLogs(engine: Engine, t: Target, lineCount: number, since?: { docker: string; ms: number }) {
  const info = await inspectTarget(engine, t);
  // One line more than asked tells whether lines were left out.
  const res = await openLog(engine.o.socketPath, info.Id, { tail: lineCount + 1, timestamps: true, since: since?.docker });
  const { lines, cut } = await newestLines(res, !!info.Config?.Tty, POLL_MAX_CHARS);
  const truncated = cut || lines.length > lineCount;
  const logs = truncated ? lines.slice(lines.length - lineCount) : lines;
  const lastTs = logs.length ? logs[logs.length - 1].slice(0, logs[logs.length - 1].indexOf(' ')) : null;
  return { logs, lineCount, logCount: logs.length, sinceTimestamp: lastTs ?? (since ? new Date(since.ms).toISOString() : null), truncated };
}

/** Used, free and total bytes of the component's volume (its loop-mounted file system). */
export async function diskOf(engine: Engine, container: string) {
  const mp = engine.volumes.mountpoint(container);
  try {
    const s = await fs.promises.statfs(mp);
    const total = s.blocks * s.bsize;
    const free = s.bavail * s.bsize;
    return { mountpoint: mp, total, used: total - s.bfree * s.bsize, available: free };
  } catch {
    return { mountpoint: mp, total: 0, used: 0, available: 0, error: 'volume not mounted' };
  }
}

export async function statsOf(engine: Engine, t: Target) {
  const info = await inspectTarget(engine, t);
  const stats = await engine.container(t.container).stats({ stream: false });
  return { ...stats, disk_stats: await diskOf(engine, t.container), nanoCpus: info.HostConfig?.NanoCpus ?? 0 };
}

/** `cmd` as an argv: an array of strings, or one string run by `/bin/sh -c`. */
export function argvOf(cmd: unknown): string[] {
  if (typeof cmd === 'string' && cmd.trim()) return ['/bin/sh', '-c', cmd];
  if (Array.isArray(cmd) && cmd.length && cmd.every((x) => typeof x === 'string')) return cmd;
  throw new ApiError(400, 'BadRequest', 'cmd: must be a non-empty string or an array of strings');
}

export function envOf(env: unknown): string[] {
  if (env === undefined || env === null) return [];
  if (Array.isArray(env) && env.every((x) => typeof x === 'string' && /^[^=]+=/.test(x))) return env;
  throw new ApiError(400, 'BadRequest', 'env: must be an array of NAME=value strings');
}
