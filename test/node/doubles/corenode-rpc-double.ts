/**
 * TEST-ONLY double of the cloud daemon's node RPCs that litecoind lacks: a JSON-RPC proxy in front of a
 * real regtest litecoind that answers `getlegacynodestatus` and `viewdeterministiclegacynodelist` from
 * values the test sets, and forwards every other call (gettxout, getblockcount, ...) to litecoind.
 * It listens on 127.0.0.1 and, through `serveAt`, on unix sockets too: the testbed's hosts (network
 * namespaces) reach it through a socket file, which every namespace sees (test/support/testbed/chain.ts).
 */
import http from 'node:http';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';

/** An entry of the node list: `ip` (`IP`, `IP:PORT` or `[v6]:PORT`), and the other fields the daemon gives. */
export type NodeListEntry = { ip: string; pubkey?: string; [field: string]: unknown };

export interface CorenodeRpcDouble {
  url: string;
  status: Record<string, unknown> | null;
  nodeList: NodeListEntry[];
  /** Serve the same answers on a unix socket as well. */
  serveAt(socketPath: string): Promise<void>;
  close(): Promise<void>;
}

export async function startCorenodeRpcDouble(upstream: { url: string; user: string; password: string }): Promise<CorenodeRpcDouble> {
  const auth = 'Basic ' + Buffer.from(`${upstream.user}:${upstream.password}`).toString('base64');
  const servers: http.Server[] = [];
  const double: CorenodeRpcDouble = { url: '', status: null, nodeList: [], serveAt: async () => {}, close: async () => {} };
  const handler: http.RequestListener = async (req, res) => {
    try {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      const call = JSON.parse(body) as { id: unknown; method: string };
      const answer = (result: unknown, error: unknown = null) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ result, error, id: call.id }));
      };
      if (call.method === 'getlegacynodestatus') return double.status ? answer(double.status) : answer(null, { code: -1, message: 'Node not registered' });
      if (call.method === 'viewdeterministiclegacynodelist') return answer(double.nodeList);
      const up = await fetch(upstream.url, { method: 'POST', body, headers: { authorization: auth, 'content-type': 'application/json' } });
      res.statusCode = up.status;
      res.setHeader('content-type', 'application/json');
      res.end(await up.text());
    } catch (e) {
      // A bad request or litecoind gone (stopping): an answer, never an unhandled rejection in the test process.
      if (!res.headersSent) res.statusCode = 502;
      res.end(JSON.stringify({ result: null, error: { code: -1, message: `rpc double: ${(e as Error).message}` }, id: null }));
    }
  };
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  double.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  double.serveAt = async (socketPath) => {
    fs.rmSync(socketPath, { force: true });
    const s = http.createServer(handler);
    servers.push(s);
    await new Promise<void>((resolve, reject) => s.once('error', reject).listen(socketPath, resolve));
  };
  double.close = () => Promise.all(servers.map((s) => new Promise<void>((r) => (s.closeAllConnections(), s.close(() => r()))))).then(() => undefined);
  return double;
}
