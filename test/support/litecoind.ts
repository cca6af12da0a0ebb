/**
 * A real litecoind in regtest for the tests: free ports, a temporary data dir, a wallet to mine into and
 * pay from. Stopped (and its folder removed) by `stop()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createRpcClient, type RpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { atExit } from './at-exit.ts';
import { freePort } from './ports.ts';
import { tempDir } from './node.ts';

export interface Regtest {
  rpc: RpcClient;
  url: string;
  user: string;
  password: string;
  rpcPort: number;
  datadir: string;
  /** The daemon's process id (benchmarks read its CPU time). */
  pid: number;
  /** The daemon's config file (rpcuser, rpcpassword, rpcport), as a node reads it. */
  confFile: string;
  /** An address of the test wallet that receives mined coins. */
  miner: string;
  /** Mine `n` blocks to `address` (default the miner); returns the block hashes. */
  mine(n: number, address?: string): Promise<string[]>;
  /**
   * An address no wallet of this daemon holds (the key is secp256k1's generator point): coins mined to it
   * make a long chain without making the test wallet large, whose coin selection for each payment grows
   * with its outputs (three payments: 0.06 s of the daemon's CPU with 100 outputs in the wallet, 3.0 s with
   * 1,350; measured).
   */
  outsider(): Promise<string>;
  stop(): Promise<void>;
}

/** The compressed public key of secp256k1's generator point: a key in no test wallet. */
const GENERATOR_PUBKEY = '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798';

/** The daemon could not bind its RPC port: another process took it after `freePort` chose it. */
class PortTaken extends Error {}

/**
 * A regtest daemon with a wallet, answering RPC. The kernel chooses its port (`freePort`), which is free
 * only until the daemon binds it, and the suite's other processes bind ports meanwhile: when the daemon
 * exits on the bind, it starts again on another port.
 */
export async function startLitecoind(opts: LitecoindOptions = {}): Promise<Regtest> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts);
    } catch (e) {
      if (!(e instanceof PortTaken) || attempt === 3) throw e;
    }
  }
}

export interface LitecoindOptions {
  extraArgs?: string[];
  /**
   * Its data folder (made here; removed at stop), instead of a temp folder of its own: the testbed keeps
   * everything it starts under its own folder, so that a process naming that folder is known to be its.
   */
  datadir?: string;
}

async function startOnce(opts: LitecoindOptions): Promise<Regtest> {
  const datadir = opts.datadir ?? tempDir('corenode-ltc-');
  fs.mkdirSync(datadir, { recursive: true });
  const rpcPort = await freePort();
  const p2pPort = await freePort();
  const user = 'corenode';
  const password = randomBytes(12).toString('hex');
  const confFile = path.join(datadir, 'litecoin.conf');
  fs.writeFileSync(
    confFile,
    [
      'regtest=1',
      'server=1',
      'txindex=1',
      'fallbackfee=0.0002',
      // A wallet's key pool is made when it is created: 1,000 keys by default, 1.3 s of the daemon's 1.9 s of
      // CPU from spawn to a wallet and an address (measured; 0.55-0.69 s with 1). The suite starts ~47
      // daemons; an HD wallet derives further keys when asked for them.
      'keypool=1',
      // Regtest turns on the daemon's own consistency checks, and one of them walks the whole block index at
      // every block connected: mining cost 2 ms a block at height 100 and 7 ms at 1,600 (quadratic in a
      // test's chain), against a flat 2 ms with it off (measured). Off, as on any production daemon.
      'checkblockindex=0',
      // The signature and script caches (32 MB between them by default) are made at start: 0.15 of the daemon's 0.58 s
      // of CPU from spawn to its first RPC answer (measured). A test's few transactions do not need them.
      'maxsigcachesize=1',
      `rpcuser=${user}`,
      `rpcpassword=${password}`,
      '[regtest]',
      `rpcport=${rpcPort}`,
      `port=${p2pPort}`,
      'rpcbind=127.0.0.1',
      'rpcallowip=127.0.0.1',
      'listen=0',
      'dnsseed=0',
      'upnp=0',
      'rpcworkqueue=64',
      // MWEB activation breaks block templates in 0.21 regtest (bad-txns-vin-empty); keep the deployment off.
      'vbparams=mweb:-2:0',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn('litecoind', [`-datadir=${datadir}`, `-conf=${confFile}`, '-printtoconsole=0', ...(opts.extraArgs ?? [])], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  // The test process interrupted (Ctrl-C, kill) before `stop()`: the daemon goes with it.
  const forget = atExit(() => {
    child.kill('SIGKILL');
    fs.rmSync(datadir, { recursive: true, force: true });
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const url = `http://127.0.0.1:${rpcPort}/`;
  const rpc = createRpcClient({ url, user, password, timeoutMs: 60_000, concurrency: 8, name: 'litecoind' });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      await rpc.call('getblockchaininfo');
      break;
    } catch (e) {
      if (child.exitCode !== null) {
        if (!/Unable to start HTTP server|Unable to bind/.test(stderr)) throw new Error(`litecoind exited (${child.exitCode}): ${stderr}`);
        forget();
        rpc.close();
        fs.rmSync(datadir, { recursive: true, force: true });
        throw new PortTaken(`litecoind could not bind port ${rpcPort}: ${stderr}`);
      }
      if (Date.now() > deadline) throw new Error(`litecoind did not answer RPC in time: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  await rpc.call('createwallet', ['test']);
  const miner = await rpc.call<string>('getnewaddress', ['', 'legacy']);

  let stopped = false;
  return {
    rpc,
    url,
    user,
    password,
    rpcPort,
    datadir,
    pid: child.pid!,
    confFile,
    miner,
    mine: (n, address = miner) => rpc.call<string[]>('generatetoaddress', [n, address]),
    async outsider() {
      const { descriptor } = await rpc.call<{ descriptor: string }>('getdescriptorinfo', [`pkh(${GENERATOR_PUBKEY})`]);
      return (await rpc.call<string[]>('deriveaddresses', [descriptor]))[0];
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      forget();
      await rpc.call('stop').catch(() => undefined);
      // litecoind exits only once every RPC connection is closed (rpcservertimeout, 30 s): close ours.
      rpc.close();
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
      fs.rmSync(datadir, { recursive: true, force: true });
    },
  };
}
