/**
 * Where a bitcoin-family daemon writes its debug.log: `<datadir>[/<network folder>]/debug.log`, the datadir
 * being the conf's `datadir` or the conf's own folder (facts §4.4). The benchmark daemon falls back to its
 * well-known folders.
 */
import fs from 'node:fs';
import path from 'node:path';
import { readConf, type Network } from '../../lib/daemon-rpc/conf.ts';

const NET_DIRS: Record<Network, string[]> = { main: [], test: ['testnet3', 'testnet4', 'testnet'], regtest: ['regtest'] };

/** Candidate debug.log files of a daemon, best first. */
export function debugLogCandidates(confFile: string | undefined, network: Network | undefined, fallbackDirs: string[] = []): string[] {
  const out: string[] = [];
  if (confFile) {
    let datadir = path.dirname(confFile);
    let net: Network = network ?? 'main';
    try {
      const conf = readConf(confFile, network);
      datadir = conf.values.datadir || datadir;
      net = conf.network;
    } catch {
      /* an unreadable conf: its folder is still the best guess */
    }
    for (const sub of NET_DIRS[net]) out.push(path.join(datadir, sub, 'debug.log'));
    out.push(path.join(datadir, 'debug.log'));
  }
  for (const d of fallbackDirs) out.push(path.join(d, 'debug.log'));
  return out;
}

export function firstExisting(files: string[]): string | undefined {
  return files.find((f) => {
    try {
      return fs.statSync(f).isFile();
    } catch {
      return false;
    }
  });
}
