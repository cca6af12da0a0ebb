/**
 * /core/restart on a real node process under a supervisor (the test plays systemd's `Restart=always`):
 * the node stops gracefully on its own SIGTERM — a request still sending its body is answered — comes back,
 * and a wallet session made before the restart is still valid after it.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { REPO_ROOT } from '../../core/config.ts';
import { clientAt } from '../support/node.ts';
import { bitcoinWallet, login } from '../support/wallets.ts';
import { err, ok, tmp, waitFor } from './support.ts';
import { entryArgs } from '../support/entry.ts';

describe('graceful restart under a supervisor (real node process)', function () {
  this.timeout(120_000);
  const port = 27000 + Math.floor(Math.random() * 900);
  const base = `http://127.0.0.1:${port}`;
  let root: string;
  let child: ChildProcess | undefined;
  let starts = 0;
  let stopping = false;
  const exits: (number | null)[] = [];

  function supervise(config: string) {
    if (stopping) return;
    starts++;
    child = spawn(process.execPath, entryArgs('node'), {
      cwd: REPO_ROOT,
      env: { ...process.env, CORENODE_CONFIG: config },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.once('exit', (code) => {
      exits.push(code);
      setTimeout(() => supervise(config), 100); // RestartSec
    });
  }

  const client = clientAt(base);

  after(async () => {
    stopping = true;
    if (child && child.exitCode === null) {
      const gone = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await gone;
    }
    if (root) fs.rmSync(root, { recursive: true, force: true });
  });

  it('answers the request in flight, comes back, and keeps the sessions', async () => {
    root = tmp('restart');
    const wallet = bitcoinWallet();
    const manifests = path.join(root, 'manifests');
    fs.mkdirSync(manifests);
    for (const m of ['host', 'node', 'identity']) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', `${m}.yaml`), path.join(manifests, `${m}.yaml`));
    const config = path.join(root, 'node.yaml');
    fs.writeFileSync(
      config,
      [
        `api: { port: ${port}, host: 127.0.0.1 }`,
        `dataDir: ${path.join(root, 'data')}`,
        `manifestsDir: ${manifests}`,
        `initial: { legacyid: ${wallet.legacyid} }`,
        'log: { level: silent }',
        'watch: false',
        '',
      ].join('\n'),
    );
    supervise(config);
    await waitFor(() => client.get('/core/version').then((a) => a.json?.status === 'success', () => false), 60_000, 'the node to start');
    const session = await login(client, wallet);
    const H = { legacyidauth: session.header };
    assert.equal(ok(await client.post('/id/checkprivilege', {}, H)).privilege, 'admin');

    // A login request whose body is still arriving when the restart is asked for.
    const phrase = ok(await client.get('/id/loginphrase')) as string;
    const body = JSON.stringify({ legacyid: wallet.legacyid, loginPhrase: phrase, signature: await wallet.sign(phrase) });
    const inFlight = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(`${base}/id/verifylogin`, { method: 'POST', headers: { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      });
      req.on('error', reject);
      req.write(body.slice(0, 20));
      setTimeout(() => req.end(body.slice(20)), 500);
    });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(ok(await client.get('/core/restart', H)), 'Restarting CoreOS');
    const answered = await inFlight;
    assert.equal(JSON.parse(answered.text).status, 'success', answered.text);

    await waitFor(() => starts === 2, 30_000, 'the supervisor to start the node again');
    assert.deepEqual(exits, [0], 'the node stopped cleanly');
    await waitFor(() => client.get('/core/version').then((a) => a.json?.status === 'success', () => false), 60_000, 'the node to come back');
    assert.ok(ok(await client.get('/core/uptime')) < 30);
    assert.equal(ok(await client.post('/id/checkprivilege', {}, H)).privilege, 'admin', 'the session survived');
    assert.equal(err(await client.get('/core/restart')).code, 401);
  });
});
