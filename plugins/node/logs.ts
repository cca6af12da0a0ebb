/**
 * The log routes: the node's own level files (written by the host under `<dataDir>/logs/`), the daemon's
 * debug.log (found from its conf and network) and the benchmark daemon's. Downloads stream the file as an
 * attachment; tails answer the last 100 lines (spec Limits) as a success message, read from the file's end.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiError, reply, type Handler } from '../../core/plugin-api.ts';
import type { DaemonControl } from '../daemon/api.ts';
import { debugLogCandidates, firstExisting } from './daemonfiles.ts';
import type { NodeConfig } from './settings.ts';
import { tailLines } from './tail.ts';

export const TAIL_LINES = 100;
const LEVELS = ['error', 'warn', 'info', 'debug'] as const;

async function download(file: string | undefined, what: string) {
  if (!file) throw new ApiError(404, 'LogNotFound', `No ${what} was found on this node`);
  let size: number;
  try {
    const st = await fs.promises.stat(file);
    if (!st.isFile()) throw new Error('not a file');
    size = st.size;
  } catch {
    throw new ApiError(404, 'LogNotFound', `No ${what} was found on this node`);
  }
  return reply(200, fs.createReadStream(file, { end: Math.max(0, size - 1) }), {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Disposition': `attachment; filename="${path.basename(file)}"`,
    'Content-Length': String(size),
  });
}

async function tail(file: string | undefined, what: string) {
  if (!file) throw new ApiError(404, 'LogNotFound', `No ${what} was found on this node`);
  try {
    return { message: await tailLines(file, TAIL_LINES) };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new ApiError(404, 'LogNotFound', `No ${what} was found on this node`);
    throw new ApiError(500, 'LogUnreadable', `The ${what} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

export function logHandlers(config: NodeConfig, dataDir: string, daemonControl: () => DaemonControl | undefined): Record<string, Handler> {
  const own = (level: string) => path.join(dataDir, 'logs', `${level}.log`);
  const daemonLog = () => {
    const conf = daemonControl()?.conf();
    return config.daemon.debugLog ?? firstExisting(debugLogCandidates(conf?.confFile, conf?.network));
  };
  const benchLog = () => config.benchmark.debugLog ?? firstExisting(debugLogCandidates(config.benchmark.confFile, config.benchmark.network, config.benchmark.dataDirs));
  const out: Record<string, Handler> = {};
  for (const level of LEVELS) {
    out[`${level}log`] = () => download(own(level), `${level}.log`);
    out[`tail${level}log`] = () => tail(own(level), `${level}.log`);
  }
  out.daemondebug = () => download(daemonLog(), 'daemon debug.log');
  out.taildaemondebug = () => tail(daemonLog(), 'daemon debug.log');
  out.benchmarkdebug = () => download(benchLog(), 'benchmark debug.log');
  out.tailbenchmarkdebug = () => tail(benchLog(), 'benchmark debug.log');
  return out;
}
