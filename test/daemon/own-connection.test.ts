/**
 * Calls on a connection of their own (RpcCallOptions.ownConnection), which the client resets once
 * answered: against a stand-in for a daemon that closes every connection itself after answering (as an HTTP
 * server may with `Connection: close`; litecoind keeps them open, and is covered by the explorer's fetch
 * test), the reset the kernel then refuses must not surface as an uncaught socket error, and every answer
 * arrives. Kept-alive calls on the same client keep working beside them. A large answer announced on a
 * kept-alive connection is asked again on a connection of its own.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRpcClient, isLoopback } from '../../lib/daemon-rpc/rpc.ts';

describe('daemon RPC client: own connections', function () {
  this.timeout(30_000);
  let closingDaemonStandIn: http.Server;
  let url = '';
  let requests = 0;

  before(async () => {
    closingDaemonStandIn = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        requests++;
        const { id, method } = JSON.parse(body) as { id: number; method: string };
        // A large answer (a small one for `small`), written in pieces, then the connection closed from this side.
        // With its length announced, as litecoind does.
        const answer = JSON.stringify({ id, error: null, result: { method, pad: 'x'.repeat(method === 'small' ? 10 : 40_000) } });
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer), connection: 'close' });
        res.end(answer);
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

  it('asks a large answer announced on a kept-alive connection again on one of its own; a method with many large answers goes there at once', async () => {
    const rpc = createRpcClient({ url, name: 'daemon' });
    requests = 0;
    const calls: [string, boolean | undefined][] = [
      // Kept-alive, each announced with 40 KB: dropped and asked again on a connection of their own, until
      // large answers are more than a quarter of the method's recent ones (1/8, then 0.23, 0.33 of them) ...
      ['large', undefined],
      ['large', undefined],
      ['large', undefined],
      // ... and then on their own at once
      ['large', undefined],
      ['small', undefined], // another method, its own record: kept-alive
      ['fresh', false], // a large answer, told to stay: waited for on the kept-alive connection
    ];
    const seen: [number, number][] = [];
    for (const [method, ownConnection] of calls) {
      const [r0, o0] = [requests, rpc.ownConnectionsOpened];
      const answer = await rpc.call<{ method: string }>(method, [], { ownConnection });
      assert.equal(answer.method, method);
      seen.push([requests - r0, rpc.ownConnectionsOpened - o0]);
    }
    // [requests the daemon got, own connections opened] a call
    assert.deepEqual(seen, [[2, 1], [2, 1], [2, 1], [1, 1], [1, 0], [1, 0]]);
    rpc.close();
  });
});
