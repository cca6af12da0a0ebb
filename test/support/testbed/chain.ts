/**
 * The testbed's blockchain: one regtest litecoind in the runner's namespace (test/support/litecoind.ts)
 * behind the TEST-ONLY corenode RPC double (test/node/doubles), the only double of the testbed: it answers
 * `viewdeterministiclegacynodelist` from the testbed's nodes and passes every other call to litecoind.
 *
 * Each host reaches it at its own 127.0.0.1:16124 (the daemon's RPC port), which the host's forwarder
 * carries to the double's unix socket: a node's daemon is local to it, so cutting a host off the network
 * does not cut it from its daemon, as on a real node.
 */
import crypto from 'node:crypto';
import { p2pkhAddress } from '../../../plugins/identity/ids.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble, type NodeListEntry } from '../../node/doubles/corenode-rpc-double.ts';
import { startLitecoind, type Regtest } from '../litecoind.ts';

/** Where a host's node finds its daemon (inside the host's namespace). */
export const HOST_RPC_PORT = 16124;

export interface Chain {
  ltc: Regtest;
  double: CorenodeRpcDouble;
  /** The double's URL in the runner's namespace (127.0.0.1), and litecoind's credentials. */
  url: string;
  user: string;
  password: string;
  /** The unix socket every host's forwarder connects to (once `serveAt` made it). */
  socketPath: string;
  serveAt(socketPath: string): Promise<void>;
  /** The node list the daemon answers (read at each call: change it and the nodes see it). */
  nodeList: NodeListEntry[];
  stop(): Promise<void>;
}

/** The chain, its daemon's data in `datadir` (inside the testbed's folder: the sweep then knows the daemon as the testbed's). */
export async function startChain(datadir?: string): Promise<Chain> {
  const ltc = await startLitecoind({ datadir });
  let double: CorenodeRpcDouble | undefined;
  try {
    double = await startCorenodeRpcDouble(ltc);
    const d = double;
    const chain: Chain = {
      ltc,
      double: d,
      url: d.url,
      user: ltc.user,
      password: ltc.password,
      socketPath: '',
      async serveAt(socketPath) {
        await d.serveAt(socketPath);
        chain.socketPath = socketPath;
      },
      get nodeList() {
        return d.nodeList;
      },
      set nodeList(list) {
        d.nodeList = list;
      },
      async stop() {
        await d.close();
        await ltc.stop();
      },
    };
    return chain;
  } catch (e) {
    await double?.close();
    await ltc.stop();
    throw e;
  }
}

/** `IP:PORT`, an IPv6 address in brackets, as the daemon's list writes a node's address. */
export const listedAddress = (ip: string, port: number) => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

/**
 * A node list entry with the fields the daemon gives (node-api-facts §4.2: status fields of
 * `viewdeterministiclegacynodelist`); the peers plugin reads `pubkey` and `ip`, the node plugin `ip`,
 * `txhash` and `outidx`. The collateral is made up: nothing here reads it from the chain.
 */
export function listEntry(o: { pubkey: string; ip: string; rank: number; tier?: string }): NodeListEntry {
  const txhash = crypto.randomBytes(32).toString('hex');
  return {
    collateral: `COutPoint(${txhash}, 0)`,
    txhash,
    outidx: '0',
    ip: o.ip,
    network: o.ip.startsWith('[') ? 'ipv6' : 'ipv4',
    added_height: 1,
    confirmed_height: 2,
    last_confirmed_height: 2,
    last_paid_height: 0,
    tier: o.tier ?? 'CUMULUS',
    payment_address: p2pkhAddress(Buffer.from(o.pubkey, 'hex')),
    pubkey: o.pubkey,
    activesince: String(Math.floor(Date.now() / 1000)),
    lastpaid: '0',
    amount: '1000.00',
    rank: o.rank,
  };
}
