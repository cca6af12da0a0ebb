/**
 * An nedb explorer index of an earlier version in the data dir: the node says so, removes it, and builds
 * the new default store (embedded SQLite at <dataDir>/explorer/index.sqlite) from the daemon.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { tempDir, type TestNode } from '../support/node.ts';
import { activity, assertMatchesDaemon, walletAddresses } from './support.ts';
import { httpReader, startExplorerNode, synced } from './node.ts';

describe('explorer: the nedb index of an earlier version', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let node: TestNode | undefined;
  let dataDir: string;

  before(async () => {
    ltc = await startLitecoind();
    const addrs = await walletAddresses(ltc, 3);
    await ltc.mine(101, addrs[0]);
    for (let i = 0; i < 3; i++) await activity(ltc, addrs, i);
    dataDir = tempDir('explorer-migrate-');
  });
  after(async () => {
    await node?.close();
    await ltc?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('is removed at start and the default store is built from the daemon', async () => {
    const legacy = path.join(dataDir, 'explorer', 'index.db');
    fs.mkdirSync(path.dirname(legacy), { recursive: true });
    // What the nedb store wrote: one JSON document per line (a tip and an output).
    fs.writeFileSync(legacy, '{"_id":"tip","h":5,"hash":"00"}\n{"_id":"u:aa:0","a":"x","h":1,"v":1,"s":"","cb":false}\n');
    node = await startExplorerNode(ltc, {}, { dataDir });
    assert.equal(fs.existsSync(legacy), false, 'the old index is gone');
    await synced(node, ltc);
    assert.ok(fs.existsSync(path.join(dataDir, 'explorer', 'index.sqlite')), 'the embedded store is the default');
    await assertMatchesDaemon(ltc.rpc, httpReader(node));
  });
});
