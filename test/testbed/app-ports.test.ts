/**
 * An app's port from the internet to a node behind a home router, end to end on the testbed: one node
 * behind a router running miniupnpd (`node.upnp.enabled`, the testbed's default there), its own dockerd
 * and the sample web image (apps.ts), and nft as the firewall of its host, whose input chain drops what it
 * does not allow. An owner registers and pays an app publishing port 31080 (the image's httpd on 8080), the
 * operator installs it with `installapplocally`, and a public host reaches it at the router's public
 * address: the node mapped the port on the router and allowed it on its firewall. The host's ruleset
 * reloaded while the node is stopped drops the port again, until the node's start allows it again. After
 * `appremove` the mapping and the rules are gone, and so is the answer.
 */
import assert from 'node:assert/strict';
import { component, last, ndjson, pay, signedMessage, v8Spec } from '../apps/support.ts';
import { APPS_PLUGINS, registryForward, SAMPLE_IMAGE, startApps, type DevnetApps } from '../support/testbed/apps.ts';
import { Testbed } from '../support/testbed/index.ts';
import { newWallet } from '../support/testbed/keys.ts';
import { leftovers } from '../support/testbed/names.ts';
import { eventually } from '../support/wait.ts';
import { login } from '../support/wallets.ts';

const APP_PORT = 31080;
// The node host's firewall: loopback (its forwarder, the registry, the daemon), replies; nothing else in.
const HOST_RULES = `table inet filter {
  chain input { type filter hook input priority 0; policy drop; iif lo accept; ct state established,related accept; }
  chain output { type filter hook output priority 0; policy accept; }
}
`;

describe('testbed: an app behind a UPnP router is reached from the internet, and no more once removed', function () {
  this.timeout(300_000);
  let tb: Testbed | undefined;
  let apps: DevnetApps | undefined;
  let prefix = '';
  /** The node host's ruleset (`again`: in place of the one there, as a firewall reload does). */
  const loadHostRules = (again = false) => {
    const host = tb!.net.host('behind');
    if (again) host.exec(['nft', 'delete', 'table', 'inet', 'filter']);
    host.exec(['nft', '-f', '-'], { input: HOST_RULES });
  };

  before(async () => {
    tb = await Testbed.start({
      hosts: [
        { name: 'behind', behind: 'home', node: { plugins: APPS_PLUGINS, config: { node: { firewall: { tool: 'nft', command: ['nft'] } } } } },
        { name: 'out', node: false },
      ],
      routers: [{ name: 'home', upnp: true }],
      startNodes: false,
      hostForwards: registryForward,
    });
    prefix = tb.net.prefix;
    apps = await startApps(tb);
    loadHostRules();
    await tb.node('behind').start();
    // Coins for the payment, in the daemon's wallet.
    await tb.chain.ltc.mine(101);
  });

  after(async () => {
    await apps?.stop();
    await tb?.stop();
    if (prefix) assert.deepEqual(leftovers(prefix), []);
  });

  it('opens the port on the router and the firewall at install, and closes both at removal', async () => {
    const t = tb!;
    const node = t.node('behind');
    const router = t.net.router('home');
    const hostRules = () => t.net.host('behind').exec(['nft', 'list', 'chain', 'inet', 'filter', 'input']);
    const fromInternet = () =>
      t.net.host('out').exec([process.execPath, '-e', `fetch('http://${router.v4}:${APP_PORT}/', {signal: AbortSignal.timeout(3000)}).then((r) => r.text()).then(console.log, (e) => console.log('failed', e.cause?.code ?? e.name))`]).trim();
    const admin = { legacyidauth: (await login(node, node.operator)).header };
    const mapped = async () => ((await node.get('/core/getmap', admin)).json.data as { public: { port: number }; protocol: string; description: string }[]).filter((m) => m.public.port === APP_PORT);

    await eventually(async () => (await node.get('/apps/networkpolicy')).json?.data?.held === true, { what: 'the policy held', everyMs: 300 });
    const owner = newWallet();
    const ownerAuth = { legacyidauth: (await login(node, owner)).header };
    const spec = v8Spec(owner.legacyid, 'portsapp', [component('web', SAMPLE_IMAGE, APP_PORT, 8080)]);
    const hash = (await node.post('/apps/appregister', await signedMessage(owner, spec), ownerAuth)).json.data as string;
    assert.match(hash, /^[0-9a-f]{64}$/);
    await pay(t.chain.ltc, apps!.registryAddress, (await node.post('/apps/calculateprice', spec)).json.data, hash);
    await t.chain.ltc.mine(1);
    await eventually(async () => (await node.get('/apps/appspecifications/portsapp')).json?.status === 'success', { what: 'the paid app global', everyMs: 300 });
    assert.match(fromInternet(), /^failed/);

    const installed = last(ndjson(await node.get('/apps/installapplocally/portsapp', admin)));
    assert.equal(installed.status, 'success', JSON.stringify(installed));
    await eventually(async () => (await mapped()).length === 2, { what: 'the app port mapped on the router', everyMs: 300, timeoutMs: 30_000 });
    assert.deepEqual((await mapped()).map((m) => `${m.protocol}/${m.description}`).sort(), ['tcp/Core_app_portsapp', 'udp/Core_app_portsapp']);
    assert.equal(hostRules().split(`comment "corenode app ${APP_PORT}"`).length - 1, 1, hostRules());
    await eventually(() => /Hello from an app on the corenode devnet/.test(fromInternet()), { what: 'the app answering at the router', everyMs: 500, timeoutMs: 30_000 });

    // The host's ruleset reloaded while the node is down: the port is dropped again, until the node's start
    // allows again the ports of the apps installed (the container ran on meanwhile).
    await node.stop();
    loadHostRules(true);
    assert.doesNotMatch(hostRules(), /corenode app/);
    assert.match(fromInternet(), /^failed/);
    await node.start();
    await eventually(() => /Hello from an app on the corenode devnet/.test(fromInternet()), { what: 'the app answering again after the start', everyMs: 500, timeoutMs: 30_000 });
    assert.equal(hostRules().split(`comment "corenode app ${APP_PORT}"`).length - 1, 1, hostRules());

    const removed = last(ndjson(await node.get('/apps/appremove/portsapp', ownerAuth)));
    assert.equal(removed.status, 'success', JSON.stringify(removed));
    await eventually(async () => (await mapped()).length === 0 && !hostRules().includes('corenode app'), { what: 'the mapping and the rules gone', everyMs: 300, timeoutMs: 30_000 });
    assert.doesNotMatch(router.exec(['nft', 'list', 'chain', 'inet', 'filter', 'prerouting_miniupnpd']), new RegExp(`dport ${APP_PORT} `));
    assert.match(fromInternet(), /^failed/);
  });
});
