/**
 * Streaming the daemon's chain to another node of the operator's private network (facts §4.5): the
 * preparation stops the daemon so its folders hold still; the stream is a tar of `blocks`, `chainstate`
 * and `determ_legacynodes` (those present) from the daemon's network folder, with `Approx-Content-Length`,
 * gzip on request; the daemon is started again when the stream ends. Private-network callers only (RFC 1918
 * and loopback), one stream at a time.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { ApiError, reply, type HandlerInput, type Log } from '../../core/plugin-api.ts';
import { readConf, type Network } from '../../lib/daemon-rpc/conf.ts';
import type { DaemonControl, DaemonService } from '../daemon/api.ts';
import { until } from './procs.ts';

const FOLDERS = ['determ_legacynodes', 'chainstate', 'blocks'];
const NET_DIR: Record<Network, string> = { main: '', test: 'testnet3', regtest: 'regtest' };

export function isPrivateNetwork(ip: string): boolean {
  const v4 = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
  if (net.isIPv4(v4)) {
    const [a, b] = v4.split('.').map(Number);
    return a === 10 || a === 127 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
  }
  return ip === '::1' || /^f[cd][0-9a-f]{2}:/i.test(ip);
}

/** The daemon's network folder, where its chain folders are. */
export function chainDir(confFile: string | undefined, network: Network | undefined): string | undefined {
  if (!confFile) return undefined;
  try {
    const conf = readConf(confFile, network);
    return path.join(conf.values.datadir || path.dirname(confFile), NET_DIR[conf.network]);
  } catch {
    return undefined;
  }
}

function du(dir: string): number {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) total += du(p);
    else if (e.isFile()) total += fs.statSync(p).size;
  }
  return total;
}

export function streamHandlers(opts: { control: () => DaemonControl | undefined; rpc: () => DaemonService | undefined; log: Log; stopWaitMs: number }) {
  let streaming = false;

  function guard(ip: string) {
    if (!isPrivateNetwork(ip)) throw new ApiError(403, 'Forbidden', 'Chain streaming is only for callers on the private network');
    const control = opts.control();
    const rpc = opts.rpc();
    if (!control || !rpc) throw new ApiError(503, 'DaemonPluginDisabled', 'The daemon plugin is not running on this node');
    return { control, rpc };
  }
  const answers = (rpc: DaemonService) => () =>
    rpc.call('getblockcount', [], { cache: false, timeoutMs: 2000 }).then(
      () => true,
      (e: { kind?: string }) => e?.kind !== 'unreachable',
    );

  return {
    async streamchainpreparation({ ip }: HandlerInput) {
      const { rpc } = guard(ip);
      if (streaming) throw new ApiError(503, 'StreamBusy', 'A chain stream is running');
      await rpc.call('stop', [], { cache: false, timeoutMs: 10_000 }).catch(() => undefined);
      if (!(await until(answers(rpc), false, opts.stopWaitMs))) throw new ApiError(504, 'DaemonTimeout', 'The daemon still answers after being told to stop');
      return { message: 'Daemon stopped; the chain can be streamed' };
    },

    async streamchain({ ip, values: b, signal }: HandlerInput) {
      const { control, rpc } = guard(ip);
      if (streaming) throw new ApiError(503, 'StreamBusy', 'A chain stream is already running');
      const dir = chainDir(control.conf().confFile, control.conf().network);
      if (!dir) throw new ApiError(500, 'NoChainFolder', "The daemon's chain folder is unknown (daemon.confFile is not set or unreadable)");
      if (await answers(rpc)()) throw new ApiError(409, 'DaemonRunning', 'The daemon is running; call streamchainpreparation first');
      const folders = FOLDERS.filter((f) => fs.existsSync(path.join(dir, f)));
      if (!folders.includes('blocks') || !folders.includes('chainstate')) throw new ApiError(404, 'NoChain', `No chain in ${dir}`);
      streaming = true;
      const size = folders.reduce((n, f) => n + du(path.join(dir, f)), 0);
      const tar = spawn('tar', [b.compress ? '-cz' : '-c', '-C', dir, '--', ...folders], { stdio: ['ignore', 'pipe', 'pipe'], shell: false });
      let errText = '';
      tar.stderr!.on('data', (d) => (errText = (errText + d).slice(-2000)));
      const out = new PassThrough();
      tar.stdout!.pipe(out);
      const done = () => {
        if (!streaming) return;
        streaming = false;
        // The daemon was stopped for the stream; it runs again whatever happened to the stream.
        void control.start().catch((e) => opts.log.error({ err: e }, 'daemon not restarted after the chain stream'));
      };
      tar.once('exit', (code) => {
        if (code !== 0) {
          opts.log.error({ code, stderr: errText }, 'chain stream: tar failed');
          out.destroy(new Error('tar failed'));
        }
        done();
      });
      signal.addEventListener('abort', () => tar.kill('SIGTERM'), { once: true });
      out.once('close', () => tar.exitCode === null && tar.kill('SIGTERM'));
      return reply(200, out, {
        'Content-Type': b.compress ? 'application/gzip' : 'application/x-tar',
        'Approx-Content-Length': String(size),
      });
    },
  };
}
