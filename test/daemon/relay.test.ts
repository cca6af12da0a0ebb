import assert from 'node:assert/strict';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import type { TestNode } from '../support/node.ts';
import { ok, startDaemonNode } from './support.ts';

describe('daemon relay (real litecoind)', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode;

  before(async () => {
    ltc = await startLitecoind();
    await ltc.mine(110);
    node = await startDaemonNode(ltc, { cache: { ttlMs: 0, blockTtlMs: 0 } });
  });
  after(async () => {
    try {
      await node?.close();
    } finally {
      await ltc?.stop();
    }
  });

  it('answers the daemon result as the envelope data', async () => {
    assert.equal(ok(await node.get('/daemon/getblockcount')), await ltc.rpc.call('getblockcount'));
    assert.equal(ok(await node.get('/daemon/getbestblockhash')), await ltc.rpc.call('getbestblockhash'));
  });

  it('provides the daemon service to other plugins (RpcClient shape)', async () => {
    assert.equal(ok(await node.get('/fixture/daemon/count')), 110);
    assert.deepEqual(ok(await node.get('/fixture/daemon/batch')), [110, { error: -32601 }]);
  });
});
