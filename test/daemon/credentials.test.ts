/**
 * Where the daemon's RPC endpoint and credentials come from: `daemon.rpc`, the daemon's own config file
 * (with its [network] sections), or its cookie file, re-read when a restarted daemon writes a new one.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseConf } from '../../lib/daemon-rpc/conf.ts';
import { resolveConnection } from '../../plugins/daemon/settings.ts';
import { createRpcClient } from '../../lib/daemon-rpc/rpc.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { freePort } from '../support/ports.ts';
import { tempDir } from '../support/node.ts';
import { err, ok, startDaemonNode } from './support.ts';

describe('daemon credentials: config file parsing', () => {
  it('reads key=value lines, comments, bare keys and the section of the daemon network', () => {
    const text = ['# node conf', 'rpcuser=alice', 'rpcpassword=s3cret  # trailing comment', 'regtest', 'rpcport=1', '', '[main]', 'rpcport=2', '[regtest]', 'rpcport=3', 'rpcuser=bob', '[test]', 'rpcport=4'].join('\n');
    const conf = parseConf(text, '/x/core.conf');
    assert.equal(conf.network, 'regtest');
    assert.deepEqual([conf.values.rpcuser, conf.values.rpcpassword, conf.values.rpcport], ['bob', 's3cret', '3']);
    assert.equal(parseConf(text.replace('regtest\n', ''), 'f').values.rpcport, '2');
    assert.equal(parseConf('testnet=1\n[test]\nrpcport=9\n', 'f').values.rpcport, '9');
    assert.equal(parseConf('rpcport=5\nregtest=1\nregtest.rpcport=7\n', 'f').values.rpcport, '7');
    assert.equal(parseConf('regtest=1\n[regtest]\nrpcport=7\n', 'f', 'main').values.rpcport, undefined);
  });

  it('resolves explicit keys over the cookie over the conf, and names unreadable files', () => {
    const dir = tempDir('corenode-conf-');
    try {
      const conf = path.join(dir, 'core.conf');
      fs.writeFileSync(conf, 'rpcuser=u1\nrpcpassword=p1\nrpcport=4444\n');
      fs.writeFileSync(path.join(dir, '.cookie'), '__cookie__:c00k1e');
      const base = { rpc: {} };
      assert.deepEqual(resolveConnection({ ...base, confFile: conf }), { url: 'http://127.0.0.1:4444/', user: 'u1', password: 'p1', source: `config file ${conf}` });
      assert.deepEqual(resolveConnection({ rpc: { url: 'http://h:1/' }, confFile: conf }).url, 'http://h:1/');
      assert.equal(resolveConnection({ rpc: { user: 'x', password: 'y' }, confFile: conf }).password, 'y');
      const viaCookie = resolveConnection({ ...base, confFile: conf, cookieFile: path.join(dir, '.cookie') });
      assert.deepEqual([viaCookie.user, viaCookie.password], ['__cookie__', 'c00k1e']);
      // No password in the conf: the cookie next to it.
      fs.writeFileSync(conf, 'rpcport=4444\n');
      assert.equal(resolveConnection({ ...base, confFile: conf }).password, 'c00k1e');
      // Nothing at all: the reference defaults.
      assert.deepEqual(resolveConnection(base), { url: 'http://127.0.0.1:16124/', user: 'rpcuser', password: 'rpcpassword', source: 'reference defaults' });
      assert.throws(() => resolveConnection({ ...base, confFile: path.join(dir, 'missing.conf') }), /cannot read the daemon config file .*missing\.conf \(ENOENT\)/);
      assert.throws(() => resolveConnection({ ...base, cookieFile: path.join(dir, 'nope') }), /cannot read the daemon cookie file .*is the daemon running\?/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('daemon credentials against real litecoind', function () {
  this.timeout(120_000);

  it('reads url and credentials from the daemon config file (rpcport under [regtest])', async () => {
    const ltc: Regtest = await startLitecoind();
    const node = await startDaemonNode(null, { confFile: ltc.confFile });
    try {
      assert.equal(ok(await node.get('/daemon/getblockcount')), 0);
    } finally {
      await node.close();
      await ltc.stop();
    }
  });

  it('a missing config file is one clear unreachable error, not a failed node', async () => {
    const node = await startDaemonNode(null, { confFile: '/nonexistent/core.conf' });
    try {
      const e = err(await node.get('/daemon/getblockcount'));
      assert.equal(e.name, 'DaemonUnreachable');
      assert.match(e.message, /daemon is unreachable: cannot read the daemon config file \/nonexistent\/core\.conf \(ENOENT\)/);
      assert.equal(ok(await node.get('/core/version')).length > 0, true);
    } finally {
      await node.close();
    }
  });

  it('authenticates with the cookie, and re-reads it when the restarted daemon writes a new one', async () => {
    const d = await cookieDaemon();
    const node = await startDaemonNode(null, { confFile: d.conf, cache: { ttlMs: 0 } });
    try {
      assert.equal(ok(await node.get('/daemon/getblockcount')), 0);
      const before = fs.readFileSync(d.cookie, 'utf8');
      await d.restart();
      assert.notEqual(fs.readFileSync(d.cookie, 'utf8'), before);
      assert.equal(ok(await node.get('/daemon/getblockcount')), 0);
    } finally {
      await node.close();
      await d.stop();
    }
  });
});

/** A litecoind whose conf has no rpcpassword: it authenticates RPC with the cookie it writes at each start. */
async function cookieDaemon() {
  const datadir = tempDir('corenode-ltc-cookie-');
  const conf = path.join(datadir, 'litecoin.conf');
  const rpcPort = await freePort();
  fs.writeFileSync(conf, ['regtest=1', 'server=1', '[regtest]', `rpcport=${rpcPort}`, `port=${await freePort()}`, 'rpcbind=127.0.0.1', 'rpcallowip=127.0.0.1', 'listen=0', 'dnsseed=0', ''].join('\n'));
  const cookie = path.join(datadir, 'regtest', '.cookie');
  let child: ChildProcess;
  async function start() {
    child = spawn('litecoind', [`-datadir=${datadir}`, `-conf=${conf}`, '-printtoconsole=0'], { stdio: 'ignore' });
    for (let i = 0; ; i++) {
      if (fs.existsSync(cookie)) {
        const [user, password] = fs.readFileSync(cookie, 'utf8').split(':');
        const probe = createRpcClient({ url: `http://127.0.0.1:${rpcPort}/`, user, password });
        try {
          await probe.call('getblockcount');
          return;
        } catch {
        } finally {
          probe.close(); // an open connection would hold the daemon's next stop for 30 s
        }
      }
      if (i > 300) throw new Error('cookie litecoind did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  async function stop() {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  await start();
  return {
    conf,
    cookie,
    restart: async () => (await stop(), await start()),
    stop: async () => (await stop(), fs.rmSync(datadir, { recursive: true, force: true })),
  };
}
