/**
 * `npm run devnet -- [--nodes N] [--apps] [--json]` (as root): a corenode cloud on this machine, on the
 * testbed of the tests (test/support/testbed): N nodes (default 3), each on a host of its own (a network
 * namespace with a public address on a shared internet), in the node list of one regtest litecoind, seeded
 * with the first. Prints each node's URL (http://127.0.0.1:<port>, carried into the node's namespace: no
 * interface or route is added to the machine's network) and its operator's key, the chain's RPC URL and a
 * funded wallet key. With `--apps` each node also runs the apps plugin on a dockerd of its own, a registry
 * holds a small sample web image, and the nodes take a network policy signed by a core-team key of the
 * devnet's own. With `--json` it prints one line of JSON once the network is up instead.
 * Ctrl-C (or SIGTERM) stops everything and removes it.
 */
import { parseArgs } from 'node:util';
import { Testbed } from '../test/support/testbed/index.ts';
import { wif, newWallet } from '../test/support/testbed/keys.ts';
import { APPS_PLUGINS, registryForward, startApps, type DevnetApps } from '../test/support/testbed/apps.ts';

const USAGE = 'usage: npm run devnet -- [--nodes N] [--apps] [--json]';

function options() {
  const { values } = parseArgs({ options: { nodes: { type: 'string', default: '3' }, apps: { type: 'boolean', default: false }, json: { type: 'boolean', default: false }, help: { type: 'boolean' } } });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const nodes = Number(values.nodes);
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > 40) throw new Error(`--nodes: a whole number from 1 to 40 (${USAGE})`);
  return { nodes, apps: values.apps!, json: values.json! };
}

async function main() {
  const o = options();
  if (process.getuid?.() !== 0) throw new Error('the devnet makes network namespaces: run it as root');
  const say = (s: string) => (o.json ? process.stderr : process.stdout).write(`${s}\n`);
  say(`devnet: starting ${o.nodes} node${o.nodes > 1 ? 's' : ''}${o.apps ? ' with apps' : ''}...`);
  const others = Math.max(0, o.nodes - 1);
  let apps: DevnetApps | undefined;
  const hosts = Array.from({ length: o.nodes }, (_, i) => ({ name: `node${i + 1}`, node: o.apps ? { plugins: APPS_PLUGINS } : {} }));
  const tb = await Testbed.start({
    hosts,
    // No seeds: the nodes find each other from the node list, as on the real network.
    startNodes: false,
    config: {
      log: { level: process.env.DEVNET_LOG ?? 'warn' },
      // Quicker than the internet's defaults, slow enough to leave the machine idle.
      peers: {
        maintainMs: 2000,
        pingMs: 10_000,
        backoffBaseMs: 1000,
        backoffMaxMs: 10_000,
        nodeListCacheMs: 10_000,
        minimums: { outgoing: Math.min(8, others), uniqueOutgoingIps: Math.min(7, others), incoming: Math.min(4, others), uniqueIncomingIps: Math.min(3, others) },
      },
    },
    hostForwards: o.apps ? registryForward : undefined,
  });
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    say(`devnet: ${why}: stopping...`);
    // A stop that hangs is cut short: the exit handlers then remove everything by force.
    setTimeout(() => process.exit(1), 60_000).unref();
    await apps?.stop();
    await tb.stop();
    say('devnet: stopped, nothing left');
    process.exit(0);
  };
  // at-exit.ts ends the process at once on these signals (a forced cleanup); a person's Ctrl-C gets the
  // graceful stop instead, and a second one while it runs is ignored (a terminal sends it to the whole
  // group, npm and tsx relay it once more). `listeners` leaves out tsx's own hidden handler, which tells
  // the tsx parent that this process took the signal: without it, tsx SIGKILLs this process 30 ms later
  // (seen: everything left running).
  for (const s of ['SIGINT', 'SIGTERM'] as const) {
    for (const l of process.listeners(s)) process.removeListener(s, l);
    process.on(s, () => void stop(s));
  }
  try {
    if (o.apps) apps = await startApps(tb);
    await Promise.all(tb.nodes.map((n) => n.start()));
    // A funded wallet: its key imported into the daemon's wallet (so `sendtoaddress` on the RPC URL spends
    // it), 10 mature coinbases of 50 coins mined to it.
    const funded = newWallet();
    const fundedKey = wif(funded.privateKey, 'test');
    await tb.chain.ltc.rpc.call('importprivkey', [fundedKey, 'devnet', false]);
    await tb.chain.ltc.mine(10, funded.regtestAddress);
    await tb.chain.ltc.mine(100, await tb.chain.ltc.outsider());
    const info = {
      prefix: tb.net.prefix,
      nodes: tb.nodes.map((n) => ({ name: n.name, url: n.url, operatorKey: n.operator.wif, operatorId: n.operator.legacyid, listedAt: n.listedAddress, nodeKey: n.nodeKey.pubKey })),
      chain: { rpcUrl: tb.chain.url, user: tb.chain.user, password: tb.chain.password },
      funded: { key: fundedKey, address: funded.regtestAddress, id: funded.legacyid },
      coreTeam: { key: tb.coreTeam.wif, id: tb.coreTeam.legacyid },
      registryAddress: apps?.registryAddress ?? null,
      image: apps?.image ?? null,
    };
    if (o.json) console.log(JSON.stringify(info));
    else {
      const w = Math.max(...info.nodes.map((n) => n.name.length));
      say(`\ncorenode devnet ${info.prefix}: ${info.nodes.length} node(s), each in the node list of the chain below, seeded with node1\n`);
      for (const n of info.nodes) say(`  ${n.name.padEnd(w)}  ${n.url}   operator key ${n.operatorKey} (${n.operatorId})   listed at ${n.listedAt}`);
      say(`\n  chain RPC      ${info.chain.rpcUrl}   user ${info.chain.user}   password ${info.chain.password}   (regtest litecoind)`);
      say(`  funded key     ${info.funded.key}   address ${info.funded.address}   (500 coins, in the daemon's wallet; logs in as ${info.funded.id})`);
      say(`  core team key  ${info.coreTeam.key}   (${info.coreTeam.id})`);
      if (apps) say(`  apps           paid to ${info.registryAddress}   sample image ${info.image}`);
      say(`\nLog in as node1's operator:  npm run login -- --wif - --node ${info.nodes[0].url} <<< '${info.nodes[0].operatorKey}'`);
      say('Ctrl-C stops the network and removes everything.');
    }
  } catch (e) {
    process.stderr.write(`devnet: ${(e as Error).message}\n`);
    await stop('the start failed');
  }
}

main().catch((e) => {
  process.stderr.write(`devnet: ${(e as Error).message}\n`);
  process.exit(1);
});
