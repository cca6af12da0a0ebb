/**
 * kill -9 while indexing: the node runs as a child process started as `npm start` starts it (node on the
 * compiled dist/, built first when stale: so the SQLite store's writer thread runs from its compiled module
 * too, and is killed with the process mid-write) over a chain of ~1,600 blocks, is SIGKILLed several times while its scanned height climbs, and is
 * started again on the same data dir. At the end every address's balance, unspent outputs and transaction
 * list (read through the HTTP routes) equal the daemon's: nothing lost, nothing counted twice. On the default
 * store: that every store keeps a run whole or not at all, wherever it is cut, is the store contract's crash
 * tests (a throw after each write step, both stores, scanner.test.ts and store.test.ts).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { freePort } from '../support/ports.ts';
import { fetchAnswer, tempDir, type Answer } from '../support/node.ts';
import { activity, assertMatchesDaemon, walletAddresses } from './support.ts';
import { explorerConfig, explorerManifests, httpReader, synced, until } from './node.ts';
import { nodeStoreKind, prepareIndex } from './stores.ts';
import { entryArgs } from '../support/entry.ts';

const kind = nodeStoreKind();
describe(`explorer survives kill -9 of the node while indexing (${kind.name} store)`, function () {
  this.timeout(240_000);
  let ltc: Regtest;
  let dataDir: string;
  let manifestsDir: string;
  let child: ChildProcess | undefined;

  before(async () => {
    ltc = await startLitecoind();
    await kind.setup();
    await prepareIndex(kind, 'kill');
    const addrs = await walletAddresses(ltc, 6);
    await ltc.mine(101, addrs[0]);
    // The long stretches go to an address outside the wallet: mined to the wallet's own addresses they made it
    // hold 1,500 more outputs, and its payments cost the daemon 9.2 s of CPU over this chain instead of 1.1.
    const outsider = await ltc.outsider();
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 3; i++) await activity(ltc, addrs, round * 3 + i);
      await ltc.mine(250, outsider);
    }
    dataDir = tempDir('corenode-explorer-kill-');
    manifestsDir = explorerManifests();
  });
  after(async () => {
    child?.kill('SIGKILL');
    await kind.teardown();
    await ltc?.stop();
    for (const d of [dataDir, manifestsDir]) if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  async function startChild(): Promise<{ get(p: string): Promise<Answer> }> {
    const port = await freePort();
    const configFile = path.join(dataDir, 'node.yaml');
    // Small look-ahead and runs of a few blocks: many short runs, so a kill lands in the middle of one.
    const config = { manifestsDir, watch: false, log: { level: 'silent' }, ...explorerConfig(ltc, { prefetch: 3, batchRows: 40, store: kind.nodeConfig('kill') }) };
    fs.writeFileSync(configFile, JSON.stringify(config));
    child = spawn(process.execPath, entryArgs('node'), {
      cwd: REPO_ROOT,
      env: { ...process.env, CORENODE_CONFIG: configFile, CORENODE_PORT: String(port), CORENODE_DATA_DIR: dataDir },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const base = `http://127.0.0.1:${port}`;
    const get = (p: string) => fetchAnswer(base + p);
    return { get: (p) => get(p).catch(() => ({ status: 0, headers: new Headers(), text: '', json: undefined })) };
  }

  async function killAt(node: { get(p: string): Promise<Answer> }, above: number): Promise<number> {
    let seen = -1;
    await until(async () => {
      const a = await node.get('/explorer/scannedheight');
      seen = a.json?.status === 'success' ? a.json.data.generalScannedHeight : -1;
      return seen > above;
    }, 4000);
    const exited = new Promise((r) => child!.once('exit', r));
    child!.kill('SIGKILL');
    await exited;
    return seen;
  }

  it('resumes after each kill and ends exact', async () => {
    const tip = await ltc.rpc.call<number>('getblockcount');
    const killedAt: number[] = [];
    for (const above of [200, 600, 1000, 1400]) killedAt.push(await killAt(await startChild(), above));
    for (const h of killedAt) assert.ok(h < tip, `killed at ${killedAt.join(', ')} of ${tip}: while indexing`);
    const node = await startChild();
    await synced(node, ltc);
    const seen = await assertMatchesDaemon(ltc.rpc, httpReader(node));
    assert.ok(seen.utxos > 1000, JSON.stringify(seen));
    const exited = new Promise((r) => child!.once('exit', r));
    child!.kill('SIGTERM');
    assert.equal(await exited, 0, 'a clean stop');
    child = undefined;
  });
});
