/**
 * How long a daemon takes to exit after RPC `stop`, against a real litecoind in regtest, two instances:
 *   1. baseline: two calls at once over kept-alive sockets (no idle timeout, as the node's client was), then
 *      `stop` over one of them: the other stays open and idle, and litecoind waits for it (its
 *      rpcservertimeout, 30 s);
 *   2. the daemons' client (lib/daemon-rpc): the same calls, then `stop`, after which it closes its idle
 *      sockets (and would close any socket idle for 2 s anyway).
 * Time from the `stop` answer until the daemon's pid file is gone (it removes it as it exits); ratio 1/2.
 *
 *   npm run bench:daemon-stop
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createDaemonClient } from '../../lib/daemon-rpc/client.ts';
import { startLitecoind, type Regtest } from '../../test/support/litecoind.ts';

const PROFILE = { what: 'daemon', section: 'bench', ports: { main: 0, test: 0, regtest: 0 }, defaultUser: '', defaultPassword: '', confUser: '' };

async function exitAfter(ltc: Regtest, stop: () => Promise<unknown>): Promise<number> {
  const pidFile = path.join(ltc.datadir, 'regtest', 'bitcoind.pid');
  await stop();
  const start = Date.now();
  while (fs.existsSync(pidFile)) {
    if (Date.now() - start > 90_000) throw new Error('litecoind did not exit within 90 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  return (Date.now() - start) / 1000;
}

/** One JSON-RPC call on a plain keep-alive agent (no idle timeout), as the node's client made them before. */
function rawCall(ltc: Regtest, agent: http.Agent, method: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ jsonrpc: '1.0', id: 1, method, params: [] });
    const auth = 'Basic ' + Buffer.from(`${ltc.user}:${ltc.password}`).toString('base64');
    const req = http.request(ltc.url, { method: 'POST', agent, headers: { authorization: auth, 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString()).result));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main() {
  let ltc = await startLitecoind();
  const agent = new http.Agent({ keepAlive: true });
  (ltc.rpc as unknown as { close(): void }).close();
  // Two calls at once: two sockets; `stop` then goes over one of them and the other stays open, idle.
  await Promise.all([rawCall(ltc, agent, 'getblockcount'), rawCall(ltc, agent, 'getblockcount')]);
  const before = await exitAfter(ltc, () => rawCall(ltc, agent, 'stop'));
  agent.destroy();
  await ltc.stop();

  ltc = await startLitecoind();
  (ltc.rpc as unknown as { close(): void }).close();
  const client = createDaemonClient(
    { rpc: { url: ltc.url, user: ltc.user, password: ltc.password }, timeoutMs: 10_000, concurrency: 5, maxQueued: 10, priority: { concurrency: 2, maxQueued: 10 }, methods: {}, health: { timeoutMs: 2000 } },
    PROFILE,
  );
  await Promise.all([client.call('getblockcount'), client.call('getblockcount')]);
  const after = await exitAfter(ltc, () => client.call('stop'));
  client.close();
  await ltc.stop();

  console.log('litecoind exit after RPC stop (regtest)');
  console.log(`  an idle kept-alive socket left open (baseline)   ${before.toFixed(2)} s`);
  console.log(`  lib/daemon-rpc client (closes idle sockets)      ${after.toFixed(2)} s`);
  console.log(`ratio baseline / client: ${(before / after).toFixed(1)}x faster`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
