/**
 * Chain streaming: a regtest litecoind's chain folders, streamed as a tar through /core/streamchain, are
 * unpacked into a second litecoind's folder, which then starts on them at the same tip; the first daemon
 * is started again by the node. Private-network callers only, the daemon stopped first.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createRpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { isPrivateNetwork } from '../../plugins/node/streamchain.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { CORE_TEAM, MEMBER, asOperator, authAs, err, ok, startOpsNode, tmp, waitFor } from './support.ts';

async function direct<T = unknown>(url: string, user: string, password: string, method: string, params: unknown[] = []): Promise<T> {
  const c = createRpcClient({ url, user, password, timeoutMs: 30_000, concurrency: 1 });
  try {
    return await c.call<T>(method, params);
  } finally {
    c.close();
  }
}

describe('chain streaming into a second litecoind', function () {
  this.timeout(240_000);
  let a: Regtest;
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  let bDir: string;
  let b: ChildProcess | undefined;
  const bPort = 27000 + Math.floor(Math.random() * 900);
  const bPass = randomBytes(8).toString('hex');
  const bUrl = `http://127.0.0.1:${bPort}/`;
  const pidA = () => path.join(a.datadir, 'regtest', 'bitcoind.pid');

  before(async () => {
    a = await startLitecoind();
    await a.mine(60);
    (a.rpc as ReturnType<typeof createRpcClient>).close();
    node = await startOpsNode({
      withDaemon: true,
      daemon: {
        rpc: { url: a.url, user: a.user, password: a.password },
        confFile: a.confFile,
        startCommand: ['litecoind', `-datadir=${a.datadir}`, `-conf=${a.confFile}`, '-printtoconsole=0', '-daemon'],
        startWaitMs: 60_000,
        stopWaitMs: 60_000,
      },
    });
  });
  after(async () => {
    await node?.close();
    if (b && b.exitCode === null) {
      await direct(bUrl, 'b', bPass, 'stop').catch(() => undefined);
      await new Promise((r) => b!.once('exit', r));
    }
    await direct(a.url, a.user, a.password, 'stop').catch(() => undefined);
    await waitFor(() => !fs.existsSync(pidA()), 60_000, 'litecoind A to exit').catch(() => undefined);
    await a?.stop();
    if (bDir) fs.rmSync(bDir, { recursive: true, force: true });
  });

  it('keeps the stream to private-network callers (RFC 1918 and loopback)', () => {
    for (const ip of ['10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.9', '127.0.0.1', '::1', '::ffff:192.168.0.2', 'fd00::2']) assert.ok(isPrivateNetwork(ip), ip);
    for (const ip of ['8.8.8.8', '172.32.0.1', '192.169.0.1', '2001:db8::1', '::ffff:1.1.1.1', '']) assert.ok(!isPrivateNetwork(ip), ip);
  });

  it('refuses a stream while the daemon runs, and to users', async () => {
    assert.equal(err(await node.post('/core/streamchain', {}, asOperator())).name, 'DaemonRunning');
    assert.equal(err(await node.post('/core/streamchain', {}, authAs(MEMBER))).code, 401);
    assert.equal(err(await node.get('/core/streamchainpreparation', authAs(MEMBER))).code, 401);
    assert.match(err(await node.post('/core/streamchain', { compress: 'yes' }, asOperator())).message, /compress must be true or false/);
  });

  it('streams the chain folders as a tar that a second litecoind starts on, then starts the daemon again', async () => {
    const tip = await direct<string>(a.url, a.user, a.password, 'getbestblockhash');
    assert.deepEqual(ok(await node.get('/core/streamchainpreparation', authAs(CORE_TEAM))), { message: 'Daemon stopped; the chain can be streamed' });
    await waitFor(() => !fs.existsSync(pidA()), 60_000, 'litecoind A to exit');

    bDir = tmp('ltc-b');
    fs.mkdirSync(path.join(bDir, 'regtest'));
    const conf = path.join(bDir, 'litecoin.conf');
    fs.writeFileSync(conf, ['regtest=1', 'server=1', 'rpcuser=b', `rpcpassword=${bPass}`, '[regtest]', `rpcport=${bPort}`, `port=${bPort + 1}`, 'rpcbind=127.0.0.1', 'rpcallowip=127.0.0.1', 'listen=0', 'dnsseed=0', 'upnp=0', 'vbparams=mweb:-2:0', ''].join('\n'));

    // The stream, unpacked by tar as it arrives.
    const headers = await new Promise<http.IncomingHttpHeaders>((resolve, reject) => {
      const req = http.request(`${node.url}/core/streamchain`, { method: 'POST', headers: { ...asOperator(), 'content-type': 'text/plain' } }, (res) => {
        if (res.statusCode !== 200 || !String(res.headers['content-type']).startsWith('application/x-tar')) return reject(new Error(`HTTP ${res.statusCode} ${res.headers['content-type']}`));
        const untar = spawn('tar', ['-x', '-C', path.join(bDir, 'regtest')], { stdio: ['pipe', 'ignore', 'inherit'] });
        res.pipe(untar.stdin!);
        untar.once('exit', (code) => (code === 0 ? resolve(res.headers) : reject(new Error(`tar exited ${code}`))));
      });
      req.on('error', reject);
      req.end('{}');
    });
    assert.ok(Number(headers['approx-content-length']) > 100_000, 'Approx-Content-Length');
    assert.ok(fs.existsSync(path.join(bDir, 'regtest', 'blocks')) && fs.existsSync(path.join(bDir, 'regtest', 'chainstate')));

    b = spawn('litecoind', [`-datadir=${bDir}`, `-conf=${conf}`, '-printtoconsole=0'], { stdio: 'ignore' });
    const count = await waitFor(() => direct<number>(bUrl, 'b', bPass, 'getblockcount').catch(() => 0), 60_000, 'litecoind B on the streamed chain');
    assert.equal(count, 60);
    assert.equal(await direct(bUrl, 'b', bPass, 'getbestblockhash'), tip);

    // The node starts its own daemon again after the stream.
    await waitFor(() => direct<number>(a.url, a.user, a.password, 'getblockcount').catch(() => 0), 60_000, 'litecoind A back');
    assert.equal(ok(await node.get('/daemon/getblockcount')), 60);
  });
});
