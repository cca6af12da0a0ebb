/**
 * Where a bitcoin-family daemon's RPC is and how to log in: the explicit `rpc` keys first, then the cookie
 * file, then the daemon's own config file (`rpcuser`, `rpcpassword`, `rpcport`, `rpcconnect`, `[network]`
 * sections; a conf without a password means the cookie next to the daemon's data), then the reference
 * defaults of that daemon. The blockchain daemon and the benchmark daemon differ only in those defaults.
 */
import { cookieCandidates, readConf, readCookie, type DaemonConf, type Network } from './conf.ts';

export interface EndpointSettings {
  rpc: { url?: string; user?: string; password?: string };
  confFile?: string;
  cookieFile?: string;
  network?: Network;
}

/** What one kind of daemon falls back to, and how its errors name it. */
export interface DaemonProfile {
  /** In errors: 'daemon' -> "cannot read the daemon config file". */
  what: string;
  /** The config section, named as the source of explicit credentials ('daemon.rpc'). */
  section: string;
  ports: Record<Network, number>;
  /** The network used when the conf names regtest but the daemon has no regtest port of its own. */
  regtestAs?: Network;
  defaultUser: string;
  defaultPassword: string;
  /** The user when the conf sets a password but no user. */
  confUser: string;
}

export interface Endpoint {
  url: string;
  user: string;
  password: string;
  /** Where the credentials came from, for logs and health (never the secret itself). */
  source: string;
  /** The cookie file in use: a changed cookie (daemon restarted) means reconnecting. */
  cookieFile?: string;
}

/** Resolve where and how to reach the daemon. Throws a readable Error when a named file cannot be read. */
export function resolveEndpoint(s: EndpointSettings, profile: DaemonProfile): Endpoint {
  let conf: DaemonConf | undefined;
  if (s.confFile) {
    try {
      conf = readConf(s.confFile, s.network);
    } catch (e) {
      throw new Error(`cannot read the ${profile.what} config file ${s.confFile} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
  }
  let network = conf?.network ?? s.network ?? 'main';
  if (network === 'regtest' && profile.regtestAs) network = profile.regtestAs;
  const c = conf?.values ?? {};
  const port = /^\d{1,5}$/.test(c.rpcport ?? '') ? c.rpcport : profile.ports[network];
  const url = s.rpc.url ?? `http://${c.rpcconnect || '127.0.0.1'}:${port}/`;

  if (s.rpc.user !== undefined || s.rpc.password !== undefined)
    return { url, user: s.rpc.user ?? '', password: s.rpc.password ?? '', source: profile.section };
  if (s.cookieFile) return { url, ...cookie(s.cookieFile, profile), source: `cookie ${s.cookieFile}`, cookieFile: s.cookieFile };
  if (conf && c.rpcpassword !== undefined)
    return { url, user: c.rpcuser ?? profile.confUser, password: c.rpcpassword, source: `config file ${conf.file}` };
  if (conf) {
    const found = cookieCandidates(conf).find((f) => {
      try {
        readCookie(f);
        return true;
      } catch {
        return false;
      }
    });
    if (found) return { url, ...readCookie(found), source: `cookie ${found}`, cookieFile: found };
  }
  // The reference's fixed credentials, only as the last fallback.
  return { url, user: c.rpcuser ?? profile.defaultUser, password: profile.defaultPassword, source: 'reference defaults' };
}

function cookie(file: string, profile: DaemonProfile) {
  try {
    return readCookie(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (!code) throw e; // readable, but not a cookie: the reader's own message says so
    throw new Error(`cannot read the ${profile.what} cookie file ${file} (${code}); is the daemon running?`);
  }
}

/**
 * The ports of this machine the daemon uses, for the node's own ports no app may publish: its RPC port when
 * its RPC address is this machine (loopback), and the P2P port its config file sets (`port=`). A daemon
 * whose files cannot be read yet claims what is known (its RPC port from the URL or the defaults).
 */
export function localPorts(s: EndpointSettings, profile: DaemonProfile): number[] {
  const out: number[] = [];
  let conf: DaemonConf | undefined;
  try {
    if (s.confFile) conf = readConf(s.confFile, s.network);
  } catch {
    // unreadable now: the endpoint's own errors say so when it is used
  }
  let url: URL | undefined;
  try {
    url = new URL(resolveEndpoint(s, profile).url);
  } catch {
    url = s.rpc.url ? new URL(s.rpc.url) : undefined;
  }
  if (url && /^(localhost|127\.\d+\.\d+\.\d+|\[::1\]|0\.0\.0\.0)$/i.test(url.hostname)) out.push(Number(url.port || (url.protocol === 'https:' ? 443 : 80)));
  const p2p = conf?.values.port;
  if (p2p && /^\d{1,5}$/.test(p2p)) out.push(Number(p2p));
  return out;
}
