/**
 * Calls on a connection of their own (RpcCallOptions.ownConnection), which the client resets once
 * answered: against a stand-in for a daemon that closes every connection itself after answering (as an HTTP
 * server may with `Connection: close`; litecoind keeps them open, and is covered by the explorer's fetch
 * test), the reset the kernel then refuses must not surface as an uncaught socket error, and every answer
 * arrives. Kept-alive calls on the same client keep working beside them.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRpcClient, isLoopback } from '../../lib/daemon-rpc/rpc.ts';

describe('daemon RPC client: own connections', function () {
  this.timeout(30_000);
  let closingDaemonStandIn: http.Server;
  let url = '';

  before(async () => {
    closingDaemonStandIn = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const { id, method } = JSON.parse(body) as { id: number; method: string };
        // A large answer, written in pieces, then the connection closed from this side.
        res.writeHead(200, { 'content-type': 'application/json', connection: 'close' });
        res.end(JSON.stringify({ id, error: null, result: { method, pad: 'x'.repeat(40_000) } }));
      });
    });
    await new Promise<void>((r) => closingDaemonStandIn.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(closingDaemonStandIn.address() as AddressInfo).port}/`;
  });
  after(() => new Promise((r) => closingDaemonStandIn.close(r)));

  it('applies to a daemon on this machine only (loopback addresses and localhost)', () => {
    assert.ok(isLoopback('127.0.0.1') && isLoopback('127.8.0.1') && isLoopback('[::1]') && isLoopback('localhost') && isLoopback('::ffff:127.0.0.1'));
    assert.ok(!isLoopback('10.0.0.1') && !isLoopback('example.com') && !isLoopback('128.0.0.1') && !isLoopback('[::2]'));
  });

  it('answers every call on its own connection when the daemon closes it first; nothing uncaught', async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      const rpc = createRpcClient({ url, name: 'daemon' });
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => rpc.call<{ method: string; pad: string }>(`m${i}`, [], { ownConnection: i % 2 === 0 })),
      );
      answers.forEach((a, i) => assert.equal(a.method, `m${i}`));
      // Let any socket error of the resets surface before looking.
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 0));
      rpc.close();
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    assert.deepEqual(uncaught, []);
  });
});
