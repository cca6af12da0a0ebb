/**
 * TEST-ONLY double of the cloud daemon's node RPCs that litecoind lacks: a JSON-RPC proxy in front of a
 * real regtest litecoind that answers `getlegacynodestatus` and `viewdeterministiclegacynodelist` from
 * values the test sets, and forwards every other call (gettxout, getblockcount, ...) to litecoind.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CorenodeRpcDouble {
  url: string;
  status: Record<string, unknown> | null;
  nodeList: { ip: string }[];
  close(): Promise<void>;
}

export async function startCorenodeRpcDouble(upstream: { url: string; user: string; password: string }): Promise<CorenodeRpcDouble> {
  const auth = 'Basic ' + Buffer.from(`${upstream.user}:${upstream.password}`).toString('base64');
  const double: CorenodeRpcDouble = { url: '', status: null, nodeList: [], close: async () => {} };
  const server = http.createServer(async (req, res) => {
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
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  double.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  double.close = () => new Promise((r) => (server.closeAllConnections(), server.close(() => r())));
  return double;
}
