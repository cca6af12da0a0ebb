/**
 * UPnP against a real IGD: Debian's miniupnpd as the router of a home network built from network
 * namespaces (netns-router.ts; SSDP discovery does not work on loopback). The node runs as a child
 * process inside the LAN namespace (lan-node.ts) and is reached through a unix socket. Proofs: the node
 * maps its own ports at start and again after the router lost them, a port mapped through the API is
 * reached from the internet side (and no more after unmapport), the router's public IP and gateway, levels,
 * bad input, no gateway, and the node's own mappings removed when it stops.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { canBuildHomeNetwork, createHomeNetwork, LAN_GW, LAN_NODE, WAN_IP, type HomeNetwork } from './netns-router.ts';
import { CORE_TEAM, MEMBER, asOperator, authAs, err, ok, startOpsNode, waitFor } from './support.ts';
import { getOnSocket } from '../support/unix-http.ts';

const API = 25127;

describe('UPnP through miniupnpd (network namespaces)', function () {
  this.timeout(120_000);
  let home: HomeNetwork | undefined;
  let child: ChildProcess | undefined;
  let socketPath: string;
  const helpers: ChildProcess[] = [];

  const get = (p: string, headers: Record<string, string> = {}, via = socketPath) => getOnSocket(via, p, headers);
  const mappings = async () => ok(await get('/core/getmap', asOperator())) as { public: { port: number }; private: { host: string; port: number }; protocol: string; description: string }[];
  const natRules = () => home!.exec(home!.router, ['nft', 'list', 'chain', 'inet', 'filter', 'prerouting_miniupnpd']);
  /** From the internet side: connect to the router's public address; 'open' or the failure. */
  const fromWan = (port: number) =>
    home!.exec(home!.wan, [process.execPath, '-e', `const s=require('net').connect(${port},'${WAN_IP}');s.setTimeout(1500,()=>{console.log('timeout');process.exit(0)});s.on('connect',()=>{console.log('open');process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)})`]).trim();

  before(async function () {
    if (!canBuildHomeNetwork()) return this.skip();
    home = await createHomeNetwork();
    socketPath = path.join(home.dir, 'node.sock');
    const opts = {
      config: { api: { port: API } },
      node: { upnp: { enabled: true, searchTimeoutMs: 1500, refreshMinutes: 0.05 } },
    };
    child = await startLanNode(opts, socketPath);
  });

  /** A node child process inside the LAN namespace, served on `sock`. */
  async function startLanNode(opts: object, sock: string): Promise<ChildProcess> {
    const c = spawn(home!.inNs(home!.lan)[0], [...home!.inNs(home!.lan).slice(1), process.execPath, '--import', 'tsx', path.join(REPO_ROOT, 'test/node/lan-node.ts'), JSON.stringify(opts), sock], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    helpers.push(c);
    await new Promise<void>((resolve, reject) => {
      c.stdout!.on('data', (d) => String(d).includes('ready') && resolve());
      c.once('exit', (code) => reject(new Error(`the LAN node exited (${code})`)));
    });
    return c;
  }

  after(async () => {
    for (const h of helpers) if (h !== child) h.kill();
    if (child && child.exitCode === null) {
      const gone = new Promise((r) => child!.once('exit', r));
      child.kill('SIGKILL');
      await gone;
    }
    await home?.destroy();
  });

  it('maps the node’s own ports at start (API, API+1, API-1, API+2 TCP and UDP)', async () => {
    const want = ['25127/tcp/Core_API', '25128/tcp/Core_API_SSL', '25126/tcp/Core_Home_UI', '25129/tcp/Core_Syncthing', '25129/udp/Core_Syncthing'];
    const seen = await waitFor(async () => {
      const m = await mappings();
      const got = m.filter((x) => x.private.host === LAN_NODE && x.private.port === x.public.port).map((x) => `${x.public.port}/${x.protocol}/${x.description}`);
      return want.every((w) => got.includes(w)) && got;
    }, 30_000, 'the own ports to be mapped');
    assert.ok(seen);
    assert.match(natRules(), /dport 25127 dnat ip to 192\.168\.77\.2:25127/);
  });

  it('answers the public IP and the gateway; admin and core team only', async () => {
    assert.equal(ok(await get('/core/getip', asOperator())), WAN_IP);
    assert.equal(ok(await get('/core/getip', authAs(CORE_TEAM))), WAN_IP);
    const g = ok(await get('/core/getgateway', asOperator()));
    assert.match(g.gateway.description, new RegExp(`^http://${LAN_GW.replace(/\./g, '\\.')}:\\d+/rootDesc\\.xml$`));
    assert.ok(Array.isArray(g.gateway.services) && g.gateway.services.some((s: string) => /WANIPConnection/.test(s)), JSON.stringify(g));
    assert.equal(g.address, LAN_NODE);
    // A node told where the gateway is (upnp.gatewayUrl) needs no search.
    const told = path.join(home!.dir, 'told.sock');
    const second = await startLanNode({ node: { upnp: { gatewayUrl: g.gateway.description } } }, told);
    assert.equal(ok(await get('/core/getip', asOperator(), told)), WAN_IP);
    assert.equal(ok(await get('/core/getgateway', asOperator(), told)).address, LAN_NODE);
    second.kill('SIGTERM');
    for (const p of ['/core/getip', '/core/getgateway', '/core/getmap', '/core/mapport/25301', '/core/unmapport/25301']) {
      assert.equal(err(await get(p, authAs(MEMBER))).code, 401, p);
      assert.equal(err(await get(p)).code, 401, p);
    }
  });

  it('maps a port reached from the internet side, then unmaps it', async () => {
    const listener = spawn(home!.inNs(home!.lan)[0], [...home!.inNs(home!.lan).slice(1), process.execPath, '-e', `require('net').createServer((s)=>s.end('hi')).listen(25301,'${LAN_NODE}',()=>console.log('up'))`], { stdio: ['ignore', 'pipe', 'ignore'] });
    helpers.push(listener);
    await new Promise((r) => listener.stdout!.once('data', r));
    assert.notEqual(fromWan(25301), 'open');

    assert.deepEqual(ok(await get('/core/mapport/25301', authAs(CORE_TEAM))), { message: 'Port 25301 mapped through UPnP (TCP and UDP)' });
    const manual = (await mappings()).filter((m) => m.public.port === 25301);
    assert.deepEqual(manual.map((m) => `${m.protocol}/${m.description}/${m.private.host}:${m.private.port}`).sort(), ['tcp/Core_manual_entry/192.168.77.2:25301', 'udp/Core_manual_entry/192.168.77.2:25301']);
    assert.equal(fromWan(25301), 'open');

    assert.deepEqual(ok(await get('/core/unmapport/25301', asOperator())), { message: 'Port 25301 unmapped (TCP and UDP)' });
    assert.equal((await mappings()).filter((m) => m.public.port === 25301).length, 0);
    assert.notEqual(fromWan(25301), 'open');
    const again = err(await get('/core/unmapport/25301', asOperator()));
    assert.equal(again.name, 'NotMapped');
  });

  it('refuses bad ports', async () => {
    for (const p of ['/core/mapport', '/core/mapport/0', '/core/mapport/65536', '/core/mapport/abc', '/core/mapport/80;x', '/core/unmapport', '/core/unmapport/1.5']) {
      const e = err(await get(p, asOperator()));
      assert.equal(e.code, 400, `${p}: ${e.message}`);
      assert.equal(e.name, 'ValidationError', p);
    }
    assert.equal(err(await get('/core/getmap?x=1', asOperator())).code ?? 400, 400);
  });

  it('says when no gateway answers, and maps its own ports again once the router is back', async () => {
    await home!.stopIgd();
    try {
      await noGateway();
    } finally {
      await home!.startIgd();
    }
    // A restarted miniupnpd starts with no mappings; the node's refresh (every 3 s here) maps them again.
    await waitFor(async () => (await get('/core/getmap', asOperator())).json?.data?.some?.((m: { description: string }) => m.description === 'Core_API'), 30_000, 'the own ports to be mapped again');
  });

  async function noGateway() {
    for (const p of ['/core/getip', '/core/getmap', '/core/mapport/25302']) {
      const e = err(await get(p, asOperator()));
      assert.equal(e.name, 'UpnpUnavailable', p);
      assert.equal(e.code, 503);
    }
    // A configured gateway that is not there (in this process: no search on the machine's own network).
    const away = await startOpsNode({ node: { upnp: { gatewayUrl: 'http://127.0.0.1:25498/rootDesc.xml' } } });
    try {
      const e = err(await away.get('/core/getgateway', asOperator()));
      assert.deepEqual([e.code, e.name], [503, 'UpnpUnavailable']);
      assert.match(e.message, /gateway at http:\/\/127\.0\.0\.1:25498\/rootDesc\.xml does not answer \(.*ECONNREFUSED/);
    } finally {
      await away.close();
    }
  }

  it('removes its own mappings when it stops', async () => {
    assert.match(natRules(), /dport 25127/);
    const gone = new Promise<number | null>((r) => child!.once('exit', r));
    child!.kill('SIGTERM');
    assert.equal(await gone, 0);
    const rules = natRules();
    for (const port of [25126, 25127, 25128, 25129]) assert.doesNotMatch(rules, new RegExp(`dport ${port} `), rules);
  });
});
