/**
 * Control of the daemons and of the node itself, one action at a time. The daemon's start, restart and
 * reindex are the daemon plugin's (its service, plugins/daemon/api.ts); the benchmark daemon, the updates
 * and the node's own restart run configured argument vectors.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ApiError, type Log } from '../../core/plugin-api.ts';
import type { DaemonControl, DaemonService } from '../daemon/api.ts';
import type { Benchmark } from './benchmark.ts';
import { mustRun, oneAtATime, until } from './procs.ts';
import type { NodeConfig } from './settings.ts';
import { softwareActions } from './software.ts';

/** Errors of another plugin's service as the envelope's error. */
function asApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const err = e as { name?: string; code?: number | string; message?: string };
  return new ApiError(err.code ?? 500, err.name && err.name !== 'Error' ? err.name : 'ControlFailed', err.message ?? 'The control action failed');
}

export function controlHandlers(config: NodeConfig, opts: { daemon: () => DaemonControl | undefined; rpc: () => DaemonService | undefined; warmMs: number; benchmark: Benchmark; logDir: string; log: Log; exit: () => void }) {
  const exclusive = oneAtATime();
  const logFile = path.join(opts.logDir, 'control.log');
  const daemon = () => {
    const d = opts.daemon();
    if (!d) throw new ApiError(503, 'DaemonPluginDisabled', 'The daemon plugin is not running on this node');
    return d;
  };

  /**
   * Restart the node: the configured command (a supervisor's restart), else a graceful stop (SIGTERM: the
   * requests in flight, this one included, are answered first) that the supervisor turns into a restart.
   */
  function restartNode() {
    setImmediate(() => {
      opts.log.info({ command: config.restartCommand ?? 'SIGTERM' }, 'restarting the node');
      if (!config.restartCommand) return opts.exit();
      const out = fs.openSync(logFile, 'a');
      const child = spawn(config.restartCommand[0], config.restartCommand.slice(1), { detached: true, stdio: ['ignore', out, out], shell: false });
      fs.closeSync(out);
      child.on('error', (e) => opts.log.error({ err: e }, 'the restart command failed'));
      child.unref();
    });
  }

  /**
   * The daemon plugin answers once the RPC port answers; a daemon still loading its chain answers -28 to
   * every call for a while. The node's controls answer when the daemon serves calls.
   */
  async function warm<T>(result: T): Promise<T> {
    const rpc = opts.rpc();
    if (!rpc) return result;
    const serves = () =>
      rpc.call('getblockcount', [], { cache: false, timeoutMs: 5000 }).then(
        () => true,
        (e: { code?: unknown }) => e?.code !== -28,
      );
    if (!(await until(serves, true, opts.warmMs))) throw new ApiError(504, 'DaemonTimeout', `The daemon still loads its chain ${opts.warmMs} ms after the action`);
    return result;
  }

  const software = softwareActions(config, logFile, restartNode);
  const act =
    (what: string, fn: () => Promise<unknown>) =>
    async () => {
      fs.mkdirSync(opts.logDir, { recursive: true });
      try {
        return await exclusive(what, fn);
      } catch (e) {
        throw asApiError(e);
      }
    };

  return {
    startdaemon: act('startdaemon', async () => warm(await daemon().start())),
    restartdaemon: act('restartdaemon', async () => warm(await daemon().restart())),
    // A reindexing daemon loads for as long as the chain takes: answered once it runs, as the message says.
    reindexdaemon: act('reindexdaemon', () => daemon().reindex()),
    updatedaemon: act('updatedaemon', async () => {
      await mustRun(config.daemon.updateCommand, { timeoutMs: config.commandTimeoutMs, logFile });
      await daemon().restart();
      return warm({ message: 'Daemon successfully updated' });
    }),
    startbenchmark: act('startbenchmark', () => opts.benchmark.start()),
    restartbenchmark: act('restartbenchmark', () => opts.benchmark.restart()),
    updatebenchmark: act('updatebenchmark', () => opts.benchmark.update()),
    updatecore: act('updatecore', () => software.updatecore()),
    softupdatecore: act('softupdatecore', () => software.softupdatecore()),
    softupdatecoreinstall: act('softupdatecoreinstall', () => software.softupdatecoreinstall()),
    hardupdatecore: act('hardupdatecore', () => software.hardupdatecore()),
    entermaster: act('entermaster', () => software.enter(config.git.masterBranch)),
    enterdevelopment: act('enterdevelopment', () => software.enter(config.git.developmentBranch)),
    rebuildui: act('rebuildui', async () => {
      const dir = config.ui.dir;
      if (!dir || !fs.existsSync(path.join(dir, 'package.json'))) throw new ApiError(404, 'NoFrontEnd', 'This node has no front end to rebuild (node.ui.dir is not set or holds no package.json)');
      await mustRun(config.ui.buildCommand, { cwd: dir, timeoutMs: config.commandTimeoutMs, logFile });
      return { message: 'Front end rebuilt' };
    }),
    restart: act('restart', async () => {
      restartNode();
      return 'Restarting CoreOS';
    }),
  };
}
