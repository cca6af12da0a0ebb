/**
 * Reading a bitcoin-style daemon config file (`core.conf`, `litecoin.conf`): `key=value` lines, `#` comments,
 * `[main]`/`[test]`/`[regtest]` sections. Keys of the section of the daemon's network override the top-level
 * ones (litecoind, bitcoind and zcash-based daemons all read it this way; regtest puts `rpcport` under
 * `[regtest]`). Repeated keys keep the last value. In the plugin API because the daemon and benchmark
 * plugins both read such files.
 */
import fs from 'node:fs';
import path from 'node:path';

export type Network = 'main' | 'test' | 'regtest';

export interface DaemonConf {
  file: string;
  network: Network;
  /** Effective values for that network. */
  values: Record<string, string>;
}

export function parseConf(text: string, file: string, network?: Network): DaemonConf {
  const top: Record<string, string> = {};
  const sections: Record<string, Record<string, string>> = {};
  let current = top;
  for (const raw of text.split(/\r?\n/)) {
    // As the daemons read it: `#` starts a comment anywhere on the line (they refuse `#` in rpcpassword).
    const hash = raw.indexOf('#');
    const line = (hash < 0 ? raw : raw.slice(0, hash)).trim();
    if (!line) continue;
    const section = /^\[([^\]]+)\]$/.exec(line);
    if (section) {
      current = sections[section[1].trim().toLowerCase()] ??= {};
      continue;
    }
    const eq = line.indexOf('=');
    // A bare key (`regtest`) means key=1, as the daemons read it.
    const key = (eq < 0 ? line : line.slice(0, eq)).trim();
    const value = eq < 0 ? '1' : line.slice(eq + 1).trim();
    // `regtest.rpcport=1` is the one-line form of a section key.
    const dot = key.indexOf('.');
    if (dot > 0 && current === top) (sections[key.slice(0, dot).toLowerCase()] ??= {})[key.slice(dot + 1)] = value;
    else current[key] = value;
  }
  const net: Network = network ?? (on(top.regtest) ? 'regtest' : on(top.testnet) ? 'test' : 'main');
  return { file, network: net, values: { ...top, ...(sections[net] ?? {}) } };
}

function on(v: string | undefined): boolean {
  return v !== undefined && v !== '0' && v.toLowerCase() !== 'false';
}

export function readConf(file: string, network?: Network): DaemonConf {
  return parseConf(fs.readFileSync(file, 'utf8'), file, network);
}

/** `__cookie__:<password>` as the daemon writes it at each start. */
export function readCookie(file: string): { user: string; password: string } {
  const text = fs.readFileSync(file, 'utf8').trim();
  const colon = text.indexOf(':');
  if (colon <= 0) throw new Error(`${file} is not a cookie file (expected user:password)`);
  return { user: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** Where a daemon using this conf writes its cookie: `<datadir>[/<network dir>]/.cookie`. */
export function cookieCandidates(conf: DaemonConf): string[] {
  const datadir = conf.values.datadir || path.dirname(conf.file);
  const sub = conf.network === 'regtest' ? ['regtest'] : conf.network === 'test' ? ['testnet3', 'testnet4'] : [];
  return [...sub.map((s) => path.join(datadir, s, '.cookie')), path.join(datadir, '.cookie')];
}
