/**
 * Connection bounds in-process (the attacks on a real node process are in test/attack/): the descriptor
 * cap and idle eviction, the body budget, the JSON depth scan, and a store whose file cannot be opened.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { connectionCap, softFdLimit } from '../../core/http/connections.ts';
import { BodyBudget } from '../../core/http/body-budget.ts';
import { jsonDepth } from '../../core/http/body.ts';
import { Stores } from '../../core/services/store.ts';
import { startCoreNode } from '../support/fixture.ts';
import { tempDir } from '../support/node.ts';

describe('connection bounds', () => {
  it('derives the connection cap from the soft descriptor limit', () => {
    assert.equal(connectionCap(1024), 896);
    assert.equal(connectionCap(65536), 65536 - 8192);
    assert.equal(connectionCap(100), 16);
    const limits = fs.readFileSync('/proc/self/limits', 'utf8');
    assert.match(limits, new RegExp(`Max open files\\s+${softFdLimit()}\\s`));
  });

  it('at the cap, a new connection closes the one idle the longest; the new one is served', async () => {
    const node = await startCoreNode({ config: { api: { maxConnections: 4 } } });
    const port = Number(new URL(node.url).port);
    const sockets: net.Socket[] = [];
    try {
      const closed: number[] = [];
      for (let i = 0; i < 4; i++) {
        const s = net.connect(port, '127.0.0.1');
        s.resume();
        s.on('close', () => closed.push(i));
        sockets.push(s);
        await new Promise((r) => s.once('connect', r));
      }
      // Let the node see all four before the fifth arrives.
      const deadline = Date.now() + 5000;
      while (node.host.connections!.open < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const res = await node.get('/core/version');
      assert.equal(res.status, 200);
      while (!closed.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(closed, [0], 'the oldest idle connection made room');
    } finally {
      for (const s of sockets) s.destroy();
      await node.close();
    }
  });

  it('body budget: the total and the per-address sum bound bodies in flight; one body alone may reach its limit', () => {
    const b = new BodyBudget(100, 30);
    const a1 = b.ticket('a');
    assert.ok(a1.charge(50), 'one body alone passes the per-address bound');
    const a2 = b.ticket('a');
    assert.equal(a2.charge(1), false, 'a second body from the same address over its 30');
    const c = b.ticket('c');
    assert.ok(c.charge(30));
    assert.equal(b.ticket('d').charge(30), false, 'the total is 100');
    a1.release();
    assert.ok(a2.charge(20));
    c.release();
    a2.release();
    assert.equal(b.used, 0);
  });

  it('measures JSON nesting outside strings', () => {
    assert.equal(jsonDepth('{"a":[1,{"b":"[[[[{{"}]}'), 3);
    assert.equal(jsonDepth('"\\"[[["'), 0);
    assert.equal(jsonDepth('['.repeat(10_000) + ']'.repeat(10_000)), 10_000);
  });

  it('a store file that cannot be opened fails the operation, not the process; the next one retries', async () => {
    const dir = tempDir('corenode-store-');
    // A folder where the data file should be: opening it for reading fails (EISDIR) inside nedb's load.
    fs.mkdirSync(path.join(dir, 'p', 'c.db'), { recursive: true });
    const stores = new Stores(dir);
    try {
      const ds = stores.get('p', 'c');
      await assert.rejects(ds.find({}), /EISDIR|illegal operation/);
      fs.rmSync(path.join(dir, 'p', 'c.db'), { recursive: true });
      assert.deepEqual(await ds.find({}), [], 'loaded on the next operation');
    } finally {
      await stores.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
