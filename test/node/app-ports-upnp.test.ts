/**
 * Held ports (the nodePorts service, plugins/node/app-ports.ts) through a real router: Debian's miniupnpd
 * in a home network of network namespaces named `cnports-<random>-r|w|l` (netns-router.ts), a node process
 * in the LAN namespace (lan-node.ts) with nft as its firewall there (the LAN's input chain drops what it
 * does not allow) and the TEST-ONLY `heldports` plugin calling the service as the apps plugin does. A port
 * is proved open by a connection from the internet side to the router's public address. Proofs: a held
 * port is mapped TCP and UDP and allowed, and reached; a second owner keeps it; the last close removes the
 * mappings and the rules; a router away is a failure shown, not thrown, and a restarted router gets the
 * mappings back at the next round; a node killed and started again maps and allows again what it held;
 * a node that stops leaves the held ports mapped (the apps keep serving) and removes its own.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { eventually } from '../support/wait.ts';
import { canBuildHomeNetwork, createHomeNetwork, LAN_NODE, WAN_IP, type HomeNetwork } from './netns-router.ts';
import { asOperator, ok } from './support.ts';
import { getOnSocket } from '../support/unix-http.ts';

const API = 31090;
// The LAN host's own firewall: loopback, replies, and the router's SSDP answers; everything else is dropped.
const LAN_RULES = `table inet filter {
  chain input { type filter hook input priority 0; policy drop; iif lo accept; ct state established,related accept; udp sport 1900 accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
`;

interface Mapping {
  public: { port: number };
  private: { host: string; port: number };
  protocol: string;
  description: string;
}

describe('held ports through miniupnpd and nft (network namespaces)', function () {
  this.timeout(120_000);
  let home: HomeNetwork | undefined;
  let node: ChildProcess | undefined;
  let dataDir: string;
  let socketPath: string;
  const helpers: ChildProcess[] = [];
  /** The node's temp folders (its manifests): a kill -9 leaves them. */
  const roots: string[] = [];

  const get = (p: string, headers: Record<string, string> = {}) => getOnSocket(socketPath, p, headers);
  const mappings = async (port: number) => (ok(await get('/core/getmap', asOperator())) as Mapping[]).filter((m) => m.public.port === port);
  const described = async (port: number) => (await mappings(port)).map((m) => `${m.protocol}/${m.description}/${m.private.host}:${m.private.port}`).sort();
  const loadLanRules = () => execFileSync(home!.inNs(home!.lan)[0], [...home!.inNs(home!.lan).slice(1), 'nft', '-f', '-'], { input: LAN_RULES });
  const lanRules = () => home!.exec(home!.lan, ['nft', 'list', 'chain', 'inet', 'filter', 'input']);
  const natRules = () => home!.exec(home!.router, ['nft', 'list', 'chain', 'inet', 'filter', 'prerouting_miniupnpd']);
  /** From the internet side: connect to the router's public address; 'open' or the failure. */
  const fromWan = (port: number) =>
    home!.exec(home!.wan, [process.execPath, '-e', `const s=require('net').connect(${port},'${WAN_IP}');s.setTimeout(1500,()=>{console.log('timeout');process.exit(0)});s.on('connect',()=>{console.log('open');process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)})`]).trim();

  /** The node in the LAN namespace, on the same data each time (a restart). */
  async function startNodeInLan(): Promise<void> {
    const opts = {
      dataDir,
      fixtures: ['heldports'],
      config: { api: { port: API } },
      node: { upnp: { enabled: true, searchTimeoutMs: 1500, refreshMinutes: 0.05 }, firewall: { tool: 'nft', command: ['nft'] } },
    };
    const c = spawn(home!.inNs(home!.lan)[0], [...home!.inNs(home!.lan).slice(1), process.execPath, '--import', 'tsx', path.join(REPO_ROOT, 'test/node/lan-node.ts'), JSON.stringify(opts), socketPath], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    node = c;
    await new Promise<void>((resolve, reject) => {
      c.stdout!.on('data', (d) => {
        const m = /ready (\S+)/.exec(String(d));
        if (m) resolve(void roots.push(m[1]));
      });
      c.once('exit', (code) => reject(new Error(`the LAN node exited (${code})`)));
    });
  }
  async function killNode(signal: NodeJS.Signals): Promise<number | null> {
    const c = node!;
    if (c.exitCode !== null || c.signalCode !== null) return c.exitCode;
    const gone = new Promise<number | null>((r) => c.once('exit', (code) => r(code)));
    c.kill(signal);
    return gone;
  }

  before(async function () {
    if (!canBuildHomeNetwork()) return this.skip();
    home = await createHomeNetwork({ prefix: 'cnports' });
    dataDir = path.join(home.dir, 'node-data');
    socketPath = path.join(home.dir, 'node.sock');
    loadLanRules();
    // (a prober resets its connection at once: the listener ignores the error of its write)
    for (const port of [31050, 31051]) {
      const l = spawn(home.inNs(home.lan)[0], [...home.inNs(home.lan).slice(1), process.execPath, '-e', `require('net').createServer((s)=>{s.on('error',()=>{});s.end('hi')}).listen(${port},'${LAN_NODE}',()=>console.log('up'))`], { stdio: ['ignore', 'pipe', 'ignore'] });
      helpers.push(l);
      await new Promise((r) => l.stdout!.once('data', r));
    }
    await startNodeInLan();
  });

  after(async () => {
    if (node) await killNode('SIGKILL');
    for (const h of helpers) h.kill();
    for (const r of roots) fs.rmSync(r, { recursive: true, force: true });
    await home?.destroy();
  });

  it('maps a held port TCP and UDP and allows it on the firewall: reached from the internet', async () => {
    assert.notEqual(fromWan(31050), 'open');
    const opened = ok(await get('/heldports-double/open/31050/app:web'));
    assert.deepEqual(opened, { port: 31050, owners: ['app:web'], firewall: 'open', upnp: 'mapped', lastError: null });
    assert.deepEqual(await described(31050), ['tcp/Core_app_web/192.168.77.2:31050', 'udp/Core_app_web/192.168.77.2:31050']);
    assert.equal(lanRules().split('comment "corenode app 31050"').length - 1, 1);
    assert.equal(fromWan(31050), 'open');
  });

  it('keeps the port while a second owner holds it; the last close removes the mappings and the rules', async () => {
    assert.deepEqual(ok(await get('/heldports-double/open/31050/app:other')).owners, ['app:web', 'app:other']);
    assert.deepEqual(ok(await get('/heldports-double/close/31050/app:web')).owners, ['app:other']);
    assert.equal((await mappings(31050)).length, 2);
    assert.equal(fromWan(31050), 'open');
    assert.deepEqual(ok(await get('/heldports-double/close/31050/app:other')), { port: 31050, owners: [], firewall: 'closed', upnp: 'unmapped', lastError: null });
    assert.deepEqual(await mappings(31050), []);
    assert.doesNotMatch(lanRules(), /corenode app 31050/);
    assert.doesNotMatch(natRules(), /dport 31050 /);
    assert.notEqual(fromWan(31050), 'open');
    assert.deepEqual(ok(await get('/heldports-double/list')), []);
  });

  it('shows a router away as a failure, and maps again at the next round once a restarted router is back', async () => {
    assert.equal(ok(await get('/heldports-double/open/31051/app:kept')).upnp, 'mapped');
    await home!.stopIgd();
    let away;
    try {
      away = ok(await get('/heldports-double/open/31052/app:late'));
    } finally {
      await home!.startIgd();
    }
    assert.deepEqual([away.owners, away.firewall, away.upnp], [['app:late'], 'open', 'failed']);
    assert.match(away.lastError.message, /^UPnP: .*(does not answer|ECONNREFUSED|No UPnP gateway)/);
    // The restarted miniupnpd holds no mappings; the round (every 3 s here) makes both again.
    await eventually(
      async () => {
        const list = ok(await get('/heldports-double/list')) as { port: number; upnp: string; lastError: unknown }[];
        return list.length === 2 && list.every((p) => p.upnp === 'mapped' && p.lastError === null);
      },
      { what: 'both held ports mapped again', timeoutMs: 30_000 },
    );
    assert.equal((await mappings(31051)).length, 2);
    assert.equal((await mappings(31052)).length, 2);
    assert.equal(fromWan(31051), 'open');
  });

  it('maps and allows again at start what it held, after a kill -9', async () => {
    // Lost while the node is down: the mapping (taken off the router) and the rule (a reloaded ruleset).
    assert.ok(ok(await get('/core/unmapport/31051', asOperator())).message);
    assert.equal(await killNode('SIGKILL'), null);
    home!.exec(home!.lan, ['nft', 'flush', 'ruleset']);
    loadLanRules();
    assert.doesNotMatch(lanRules(), /corenode app/);
    assert.notEqual(fromWan(31051), 'open');
    await startNodeInLan();
    await eventually(async () => (await mappings(31051)).length === 2 && /corenode app 31051/.test(lanRules()), { what: '31051 mapped and allowed again', timeoutMs: 30_000 });
    assert.deepEqual((ok(await get('/heldports-double/list')) as { port: number; owners: string[] }[]).map((p) => [p.port, p.owners]), [
      [31051, ['app:kept']],
      [31052, ['app:late']],
    ]);
    await eventually(() => fromWan(31051) === 'open', { what: '31051 reached again', timeoutMs: 10_000 });
  });

  it('leaves the held ports mapped and allowed when it stops, and removes its own mappings', async () => {
    assert.equal(await killNode('SIGTERM'), 0);
    const rules = natRules();
    assert.match(rules, /dport 31051 /);
    assert.doesNotMatch(rules, new RegExp(`dport ${API} `), rules);
    assert.match(lanRules(), /corenode app 31051/);
    assert.equal(fromWan(31051), 'open');
  });
});
