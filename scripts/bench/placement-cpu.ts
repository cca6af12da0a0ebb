/**
 * `npm run bench:placement-cpu [-- --apps 200 --seconds 60 --rounds 2]`: the CPU the placement loop costs an
 * idle node that knows `--apps` global apps, against the same node knowing none (the baseline), measured in
 * the same run, windows alternated so the machine's load weighs on both alike.
 *
 * Each window runs two real node processes (`node dist/core/cli/node.js`, the apps and peers plugins,
 * linked to each other so the loop plans) and reads the CPU time of the second (it dials the first) from /proc over the window.
 * The apps are written into the second one's registry store before it starts (global, paid, not expired), each asking
 * 3 instances that nobody runs: every app has a deficit and this node fits none (it holds no network
 * policy), so every round walks all of them and their fit verdicts are checked again every
 * `apps.placement.fitCacheMs` (60 s): the loop's worst idle case.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Cluster } from '../../test/peers/cluster.ts';
import { eventually } from '../../test/support/wait.ts';
import { freePortIn } from '../../test/support/ports.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const APPS = arg('apps', 200);
const SECONDS = arg('seconds', 60);
const ROUNDS = arg('rounds', 2);
const TICKS_PER_S = 100;

function cpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS_PER_S;
}

function specsFile(n: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = `benchapp${i}`;
    const hash = crypto.createHash('sha256').update(name).digest('hex');
    const spec = { version: 8, name, description: 'bench', owner: '1BenchOwnerXXXXXXXXXXXXXXXXXXXXXX', instances: 3, contacts: [], geolocation: [], expire: 22000, nodes: [], staticip: false, enterprise: '', compose: [{ name: 'web', description: '', repotag: 'example/web:1', ports: [31100 + (i % 800)], containerPorts: [8080], environmentParameters: [], commands: [], containerData: '/data', domains: [''], cpu: 0.1, ram: 100, hdd: 1, tiered: false, secrets: '', repoauth: '' }] };
    lines.push(JSON.stringify({ _id: hash.slice(0, 16), name, owner: spec.owner, originalOwner: spec.owner, hash, height: 100, hashes: [hash], appSpecification: spec, expireHeight: 22100 }));
  }
  return lines.join('\n') + (lines.length ? '\n' : '');
}

async function window(apps: number, port: number): Promise<number> {
  const c = new Cluster({
    n: 2,
    port,
    plugins: ['identity', 'apps', 'peers'],
    operator: '1BenchOperatorXXXXXXXXXXXXXXXXXXX',
    peers: { membership: 'open', pingMs: 5000 },
    extra: () => ({ plugins: { daemon: false, explorer: false }, apps: { docker: { socketPath: '/nonexistent/docker.sock' }, placement: { warmupMs: 0 } } }),
  });
  try {
    const dir = path.join(c.nodes[1].dataDir, 'apps');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'specs.db'), specsFile(apps));
    await c.startAll();
    // Node 1 dials node 0 (its seed) and holds the apps.
    await eventually(async () => (await c.nodes[1].get('/core/connectedpeers')).json?.data?.length > 0, { what: 'the two nodes linked', everyMs: 300, timeoutMs: 60_000 });
    // Past start-up and the first rounds (every fit verdict computed once) before measuring.
    await new Promise((r) => setTimeout(r, 10_000));
    const pid = c.nodes[1].child!.pid!;
    const a = cpuMs(pid);
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    return (cpuMs(pid) - a) / (Date.now() - t0);
  } finally {
    await c.stop();
  }
}

async function main() {
  const port = await freePortIn(31150, 31199);
  const base: number[] = [];
  const loaded: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    base.push(await window(0, port));
    loaded.push(await window(APPS, port));
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const pct = (x: number) => `${(x * 100).toFixed(2)} %`;
  const b = median(base);
  const l = median(loaded);
  console.log(`placement loop CPU, idle node, ${SECONDS} s windows x ${ROUNDS} (median), share of one core:`);
  console.log(`  node knowing 0 global apps (baseline)   ${pct(b)}`);
  console.log(`  node knowing ${APPS} global apps          ${pct(l)}`);
  console.log(`  the loop's share (difference)           ${pct(Math.max(0, l - b))}   ratio ${(l / b).toFixed(2)} x baseline`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
