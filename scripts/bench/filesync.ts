/**
 * `npm run bench:filesync` (run it inside a network namespace: `scripts/dev/in-netns.sh h18b npm run
 * bench:filesync`): the time a 20 MB file takes to reach the other node
 *
 * 1. through the node's configuration: two nodes, each supervising its own Syncthing, an `r:` app's
 *    volume (tmpfs) on both; the folder, devices and addresses come from the file-sync plugin;
 * 2. against two Syncthing instances configured by hand (config.xml edited for the same listen addresses,
 *    no discovery or relays, then devices and the folder added through the REST API, with the same folder
 *    options the node uses: watcher delay 1 s).
 *
 * The file is written beside the folder and renamed into it (one watcher event), and the time runs until
 * the other side has it at full size (Syncthing renames a completed temp file into place). Rounds
 * alternate; medians; ratio = by hand / through the node (1.0: the node adds nothing).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { mountVolume, startFsNode, tmp, unmountUnder, until, type FsNode, apiPort } from '../../test/filesync/support.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const SIZE = 20 * 1024 * 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function transfer(fromDir: string, toDir: string, name: string): Promise<number> {
  const data = crypto.randomBytes(SIZE);
  const staging = path.join(path.dirname(fromDir), `${name}.staging`);
  fs.writeFileSync(staging, data);
  const t0 = performance.now();
  fs.renameSync(staging, path.join(fromDir, name));
  const target = path.join(toDir, name);
  for (;;) {
    try {
      if (fs.statSync(target).size === SIZE) break;
    } catch {
      /* not there yet */
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  const ms = performance.now() - t0;
  if (!fs.readFileSync(target).equals(data)) throw new Error(`${name} arrived different`);
  return ms;
}

interface Hand {
  home: string;
  gui: number;
  key: string;
  id: string;
  proc: ChildProcess;
}

async function handInstance(home: string, gui: number, listen: number): Promise<Hand> {
  execFileSync('syncthing', ['generate', `--home=${home}`, '--no-default-folder'], { stdio: 'ignore' });
  let xml = fs.readFileSync(path.join(home, 'config.xml'), 'utf8');
  const set = (tag: string, v: string) => (xml = xml.replace(new RegExp(`<${tag}>[^<]*</${tag}>`), `<${tag}>${v}</${tag}>`));
  set('listenAddress', `tcp://127.0.0.1:${listen}`);
  for (const t of ['globalAnnounceEnabled', 'localAnnounceEnabled', 'relaysEnabled', 'natEnabled', 'startBrowser']) set(t, 'false');
  set('reconnectionIntervalS', '2');
  set('urAccepted', '-1');
  xml = xml.replace(/(<gui\b[^>]*>\s*<address>)[^<]*/, `$1127.0.0.1:${gui}`);
  fs.writeFileSync(path.join(home, 'config.xml'), xml);
  const key = /<apikey>([^<]+)</.exec(xml)![1];
  const proc = spawn('syncthing', ['serve', `--home=${home}`, '--no-browser', '--no-restart', '--no-upgrade'], { stdio: 'ignore', env: { ...process.env, STNODEFAULTFOLDER: '1' } });
  const h: Hand = { home, gui, key, id: '', proc };
  const st = await until('hand Syncthing up', () => rest(h, 'GET', '/rest/system/status').catch(() => null), 60_000);
  h.id = (st as { myID: string }).myID;
  return h;
}

async function rest(h: Hand, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(`http://127.0.0.1:${h.gui}${p}`, { method, headers: { 'X-API-Key': h.key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) throw new Error(`${p}: ${res.status} ${await res.text()}`);
  const t = await res.text();
  return t ? JSON.parse(t) : null;
}

async function main() {
  const roots = [tmp('bench-a'), tmp('bench-b')];
  const handDirs = [tmp('bench-hand-a'), tmp('bench-hand-b')];
  const nodes: FsNode[] = [];
  const hands: Hand[] = [];
  try {
    for (const r of roots) mountVolume(path.join(r, 'coredata_bench'), '512m');
    // Two nodes of a real peer mesh (the second seeded with the first): where the app runs comes from
    // their running notices.
    const ips = ['127.0.0.21', '127.0.0.22'];
    const app = { name: 'bench', components: [{ name: 'data', containerData: 'r:/data' }] };
    for (let i = 0; i < 2; i++) nodes.push(await startFsNode({ n: 10 + i, ip: ips[i], login: false, seeds: i ? [`${ips[0]}:${apiPort(10)}`] : [], apps: { root: roots[i], apps: [app] } }));
    const nodeDir = (i: number) => path.join(roots[i], 'coredata_bench', 'appdata');
    await until('both folders send-receive', async () => {
      const r = await Promise.all(nodes.map(async (n) => (await n.post('/apps/promotedfolders', { appname: 'bench' })).json.data?.[0]));
      return r.every((x) => x?.type === 'sendreceive' && x.state === 'idle');
    }, 120_000);
    // The nodes' Syncthing instances are connected once a first small file went across.
    fs.writeFileSync(path.join(nodeDir(0), 'warm'), 'x');
    await until('warm-up file', () => fs.existsSync(path.join(nodeDir(1), 'warm')), 120_000);

    for (let i = 0; i < 2; i++) {
      const home = path.join(handDirs[i], 'home');
      hands.push(await handInstance(home, 27441 + i * 10, 27442 + i * 10));
    }
    const handDir = (i: number) => path.join(handDirs[i], 'folder');
    for (let i = 0; i < 2; i++) {
      const o = hands[1 - i];
      await rest(hands[i], 'PUT', `/rest/config/devices/${o.id}`, { deviceID: o.id, addresses: [`tcp://127.0.0.1:${27442 + (1 - i) * 10}`] });
      await rest(hands[i], 'PUT', '/rest/config/folders/bench', { id: 'bench', path: handDir(i), type: 'sendreceive', fsWatcherEnabled: true, fsWatcherDelayS: 1, rescanIntervalS: 60, devices: [{ deviceID: hands[i].id }, { deviceID: o.id }] });
    }
    fs.writeFileSync(path.join(handDir(0), 'warm'), 'x');
    await until('hand warm-up file', () => fs.existsSync(path.join(handDir(1), 'warm')), 120_000);

    const node: number[] = [];
    const hand: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const pair = [() => transfer(nodeDir(0), nodeDir(1), `f${r}`).then((ms) => node.push(ms)), () => transfer(handDir(0), handDir(1), `f${r}`).then((ms) => hand.push(ms))];
      if (r % 2) pair.reverse();
      for (const p of pair) await p();
      // Keep the tmpfs volume small: the file goes again on both sides before the next round.
      for (const d of [nodeDir(0), handDir(0)]) fs.rmSync(path.join(d, `f${r}`));
    }
    const n = median(node);
    const h = median(hand);
    console.log(`20 MB file to the other node, median of ${ROUNDS} rounds:`);
    console.log(`  through the node's configuration: ${n.toFixed(0)} ms  (${node.map((x) => x.toFixed(0)).join(', ')})`);
    console.log(`  Syncthing configured by hand:     ${h.toFixed(0)} ms  (${hand.map((x) => x.toFixed(0)).join(', ')})`);
    console.log(`  ratio by hand / node: ${(h / n).toFixed(2)}`);
  } finally {
    for (const n of nodes) await n.close().catch(() => {});
    for (const h of hands) {
      const closed = new Promise((r) => h.proc.once('close', r));
      h.proc.kill('SIGTERM');
      await closed;
    }
    for (const r of roots) unmountUnder(r);
    for (const d of [...roots, ...handDirs, ...nodes.map((n) => n.dataDir)]) fs.rmSync(d, { recursive: true, force: true });
  }
}

await main();
