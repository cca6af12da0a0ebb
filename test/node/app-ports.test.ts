/**
 * The ports other plugins hold open (plugins/node/app-ports.ts) on a real nft, in a network namespace the
 * test creates (`cnports-fw-<random>`; the machine's own rules are never touched), with the store in files
 * so that a second instance over them is a restarted node. Proofs: open adds one tagged rule to each of the
 * input and output chains and the port is reached; two owners of one port keep it open until both let go;
 * close deletes only its own rules (allowport's stay); a restarted node opens again what it held (rules
 * lost meanwhile come back) and finishes a close that failed; `none` skips the firewall; ufw's argument vectors.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Collection, Log } from '../../core/plugin-api.ts';
import { Stores } from '../../core/services/store.ts';
import { createAppPorts, type HeldPort } from '../../plugins/node/app-ports.ts';
import { createFirewall } from '../../plugins/node/firewall.ts';
import type { NodeConfig } from '../../plugins/node/settings.ts';
import { eventually } from '../support/wait.ts';
import { fwNamespace } from '../support/fw-netns.ts';

const fw = fwNamespace('cnports-fw');
const NS = fw.ns;
const inNs = fw.inNs;
const probe = fw.probe;
const canUseNamespaces = fw.create;
const RULESET = 'table inet filter {\n chain input { type filter hook input priority 0; policy drop; ct state established,related accept; }\n chain output { type filter hook output priority 0; policy accept; }\n}\n';



const count = (listing: string, needle: string) => listing.split(needle).length - 1;
const chain = (name: string) => inNs('nft', 'list', 'chain', 'inet', 'filter', name);

/** A log that keeps its warnings (a failure must be logged, never thrown). */
function quietLog(): Log & { warnings: string[] } {
  const warnings: string[] = [];
  const log = {
    warnings,
    trace() {},
    debug() {},
    info() {},
    warn(o: unknown) {
      warnings.push(JSON.stringify(o));
    },
    error(o: unknown) {
      warnings.push(JSON.stringify(o));
    },
    child: () => log,
  };
  return log;
}

function firewallConfig(over: Partial<NodeConfig['firewall']> & { table?: string } = {}): NodeConfig['firewall'] {
  return { tool: over.tool ?? 'nft', command: over.command ?? ['ip', 'netns', 'exec', NS, 'nft'], nft: { family: 'inet', table: over.table ?? 'filter', inputChain: 'input', outputChain: 'output' } };
}

describe('ports held open on the firewall: nft (network namespace)', function () {
  this.timeout(60_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cnports-store-'));
  const listeners: ChildProcess[] = [];
  let stores: Stores[] = [];
  /** An instance as a node's start makes it, over the store files in `dir`. */
  function start(fw = firewallConfig()) {
    const s = new Stores(dir);
    stores.push(s);
    const log = quietLog();
    const ports = createAppPorts({ store: s.get('node', 'appports') as unknown as Collection<HeldPort>, firewall: createFirewall(fw, path.join(dir, 'control.log')), upnp: null, clock: { now: () => Date.now() }, log });
    return { ...ports, log };
  }

  before(async function () {
    if (!canUseNamespaces()) return this.skip();
    inNs('ip', 'link', 'set', 'lo', 'up');
    execFileSync('ip', ['netns', 'exec', NS, 'nft', '-f', '-'], { input: RULESET });
    for (const port of [31010, 31011])
      listeners.push(spawn('ip', ['netns', 'exec', NS, process.execPath, '-e', `require('net').createServer((s)=>s.end()).listen(${port},'127.0.0.1')`], { stdio: 'ignore' }));
  });
  after(() => {
    for (const l of listeners) l.kill();
    stores = [];
    try {
      execFileSync('ip', ['netns', 'delete', NS], { stdio: 'ignore' });
    } catch {
      /* not created */
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('opens a port once in the input and output chains, and it is reached', async () => {
    const ports = start();
    assert.equal(probe(31010), 'blocked');
    const opened = await ports.service.open(31010, 'app:web');
    assert.deepEqual(opened, { port: 31010, owners: ['app:web'], firewall: 'open', upnp: 'disabled', lastError: null });
    assert.deepEqual(await ports.service.open(31010, 'app:web'), opened);
    for (const name of ['input', 'output']) {
      const listing = chain(name);
      assert.equal(count(listing, 'comment "corenode app 31010"'), 1, listing);
      assert.match(listing, /meta l4proto \{ tcp, udp \} th dport 31010 accept comment "corenode app 31010"/);
    }
    await eventually(() => probe(31010) === 'open', { what: 'port 31010 reached', timeoutMs: 10_000 });
    assert.equal(probe(31011), 'blocked');
    assert.deepEqual(ports.log.warnings, []);
  });

  it('keeps a port of two owners open until both let go; a close deletes only its own rules', async () => {
    const ports = start();
    await ports.refresh();
    assert.deepEqual(ports.service.list().map((p) => [p.port, p.owners]), [[31010, ['app:web']]]);
    // The operator's own allowport rule on the same port.
    await createFirewall(firewallConfig(), path.join(dir, 'control.log')).allow([{ port: 31010, tag: 'corenode allow 31010' }]);
    assert.deepEqual((await ports.service.open(31010, 'app:other')).owners, ['app:web', 'app:other']);
    assert.equal(count(chain('input'), 'comment "corenode app 31010"'), 1);

    const first = await ports.service.close(31010, 'app:web');
    assert.deepEqual([first.owners, first.firewall], [['app:other'], 'open']);
    for (const name of ['input', 'output']) assert.equal(count(chain(name), 'comment "corenode app 31010"'), 1);

    const last = await ports.service.close(31010, 'app:other');
    assert.deepEqual(last, { port: 31010, owners: [], firewall: 'closed', upnp: 'disabled', lastError: null });
    for (const name of ['input', 'output']) {
      const listing = chain(name);
      assert.equal(count(listing, 'corenode app 31010'), 0, listing);
      assert.equal(count(listing, 'comment "corenode allow 31010"'), 1, listing);
    }
    assert.deepEqual(ports.service.list(), []);
    // Closing what nobody holds changes nothing.
    assert.equal((await ports.service.close(31010, 'app:web')).firewall, 'closed');
    for (const name of ['input', 'output']) inNs('nft', 'flush', 'chain', 'inet', 'filter', name);
    inNs('nft', 'add', 'rule', 'inet', 'filter', 'input', 'ct', 'state', 'established,related', 'accept');
  });

  it('opens again at start what it held, rules lost meanwhile included', async () => {
    const before = start();
    await before.service.open(31011, 'app:kept');
    await before.settle();
    // The ruleset reloaded behind the node's back (a firewall restart): the rule is gone.
    for (const name of ['input', 'output']) inNs('nft', 'flush', 'chain', 'inet', 'filter', name);
    inNs('nft', 'add', 'rule', 'inet', 'filter', 'input', 'ct', 'state', 'established,related', 'accept');
    await eventually(() => probe(31011) === 'blocked', { what: 'port 31011 dropped again', timeoutMs: 10_000 });

    const after = start();
    await after.refresh();
    assert.deepEqual(after.service.list().map((p) => [p.port, p.owners, p.firewall]), [[31011, ['app:kept'], 'open']]);
    for (const name of ['input', 'output']) assert.equal(count(chain(name), 'comment "corenode app 31011"'), 1);
    await eventually(() => probe(31011) === 'open', { what: 'port 31011 reached again', timeoutMs: 10_000 });
    // A second round adds nothing.
    await after.refresh();
    assert.equal(count(chain('input'), 'comment "corenode app 31011"'), 1);
  });

  it('says when the firewall fails, never throws, and a restarted node finishes the close', async () => {
    const broken = start(firewallConfig({ table: 'nosuchtable' }));
    await broken.refresh();
    const closing = await broken.service.close(31011, 'app:kept');
    assert.equal(closing.firewall, 'failed');
    assert.deepEqual(closing.owners, []);
    assert.match(closing.lastError!.message, /^firewall \(nft\): .*(No such file or directory|does not exist)/);
    assert.ok(closing.lastError!.at > 0);
    assert.deepEqual(broken.service.list().map((p) => [p.port, p.owners, p.firewall]), [[31011, [], 'failed']]);
    const failedOpen = await broken.service.open(31012, 'app:new');
    assert.equal(failedOpen.firewall, 'failed');
    const warned = broken.log.warnings.length;
    assert.ok(warned >= 2, broken.log.warnings.join('\n'));
    // The same failures at the next round are not logged at warn again.
    await broken.refresh();
    assert.equal(broken.log.warnings.length, warned, broken.log.warnings.join('\n'));
    assert.equal(count(chain('input'), 'corenode app 31011'), 1);
    await broken.service.close(31012, 'app:new');

    const fixed = start();
    await fixed.refresh();
    assert.deepEqual(fixed.service.list(), []);
    for (const name of ['input', 'output']) assert.equal(count(chain(name), 'corenode app'), 0, chain(name));
  });

  it('skips the firewall with tool none, and says so', async () => {
    const none = start(firewallConfig({ tool: 'none', command: ['false'] }));
    assert.deepEqual(await none.service.open(31013, 'app:x'), { port: 31013, owners: ['app:x'], firewall: 'skipped', upnp: 'disabled', lastError: null });
    assert.equal(count(chain('input'), 'corenode app'), 0);
    assert.deepEqual(await none.service.close(31013, 'app:x'), { port: 31013, owners: [], firewall: 'skipped', upnp: 'disabled', lastError: null });
    await assert.rejects(none.service.open(0, 'app:x'), RangeError);
    await assert.rejects(none.service.open(31013, ''), TypeError);
  });

  it('runs ufw as `allow`, `allow out`, and `delete allow` of both to close', async () => {
    // A stand-in for ufw that records its arguments (no ufw touches this machine's firewall).
    const record = path.join(dir, 'ufw-calls');
    const fake = path.join(dir, 'fake-ufw.cjs');
    fs.writeFileSync(fake, `require('fs').appendFileSync(${JSON.stringify(record)}, JSON.stringify(process.argv.slice(2)) + '\\n')`);
    const ufw = start(firewallConfig({ tool: 'ufw', command: [process.execPath, fake] }));
    assert.equal((await ufw.service.open(31014, 'app:u')).firewall, 'open');
    await ufw.refresh(); // known open: ufw is not run again
    assert.equal((await ufw.service.close(31014, 'app:u')).firewall, 'closed');
    const calls = fs.readFileSync(record, 'utf8').trim().split('\n').map((l) => JSON.parse(l).join(' '));
    assert.deepEqual(calls, ['allow 31014', 'allow out 31014', 'delete allow 31014', 'delete allow out 31014']);
  });
});
