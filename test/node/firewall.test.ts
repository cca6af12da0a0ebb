/**
 * allowport through nft inside a network namespace the test creates (the machine's own rules are never
 * touched): the rule lands in the operator's filter chains once, and a port that was dropped is reached.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { CORE_TEAM, MEMBER, asOperator, authAs, err, ok, startOpsNode, waitFor } from './support.ts';
import { fwNamespace } from '../support/fw-netns.ts';

const fw = fwNamespace('nodeops-fw');
const NS = fw.ns;
const inNs = fw.inNs;
const probe = fw.probe;
const canUseNamespaces = fw.create;

describe('allowport through nft (network namespace)', function () {
  this.timeout(60_000);
  let listeners: ChildProcess[] = [];
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  before(async function () {
    if (!canUseNamespaces()) return this.skip();
    inNs('ip', 'link', 'set', 'lo', 'up');
  });
  after(async () => {
    await node?.close();
    for (const l of listeners) l.kill();
    try {
      execFileSync('ip', ['netns', 'delete', NS], { stdio: 'ignore' });
    } catch {
      /* not created */
    }
  });

  it('allows the port in the filter chains once, and it becomes reachable', async () => {
    // The operator's ruleset: inbound dropped unless allowed, replies of open connections accepted.
    execFileSync('ip', ['netns', 'exec', NS, 'nft', '-f', '-'], {
      input: 'table inet filter {\n chain input { type filter hook input priority 0; policy drop; ct state established,related accept; }\n chain output { type filter hook output priority 0; policy accept; }\n}\n',
    });
    for (const port of [27123, 27124])
      listeners.push(spawn('ip', ['netns', 'exec', NS, process.execPath, '-e', `require('net').createServer((s)=>s.end()).listen(${port},'127.0.0.1')`], { stdio: 'ignore' }));
    node = await startOpsNode({ node: { firewall: { tool: 'nft', command: ['ip', 'netns', 'exec', NS, 'nft'] } } });
    assert.equal(probe(27123), 'blocked');

    assert.deepEqual(ok(await node.get('/core/allowport/27123', asOperator())), { message: 'Port 27123 allowed in and out' });
    assert.deepEqual(ok(await node.get('/core/allowport/27123', authAs(CORE_TEAM))), { message: 'Port 27123 allowed in and out' });
    for (const chain of ['input', 'output']) {
      const listing = inNs('nft', 'list', 'chain', 'inet', 'filter', chain);
      assert.equal(listing.split('comment "corenode allow 27123"').length - 1, 1, listing);
      assert.match(listing, /th dport 27123 accept/);
    }
    // (the listener in the namespace may still be starting: poll)
    await waitFor(() => probe(27123) === 'open', 10_000, 'port 27123 to answer');
    assert.equal(probe(27124), 'blocked');
  });

  it('refuses bad ports and other callers, and says when the tool fails', async () => {
    for (const p of ['/core/allowport', '/core/allowport/0', '/core/allowport/65536', '/core/allowport/80;reboot', '/core/allowport/-1'])
      assert.equal(err(await node.get(p, asOperator())).code, 400, p);
    assert.equal(err(await node.get('/core/allowport/27125', authAs(MEMBER))).code, 401);
    const broken = await startOpsNode({ node: { firewall: { tool: 'nft', command: ['ip', 'netns', 'exec', NS, 'nft'], nft: { table: 'nosuchtable' } } } });
    try {
      const e = err(await broken.get('/core/allowport/27125', asOperator()));
      assert.equal(e.name, 'CommandFailed');
      assert.match(e.message, /No such file or directory|does not exist/);
    } finally {
      await broken.close();
    }
  });
});
