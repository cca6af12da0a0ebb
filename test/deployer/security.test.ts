/**
 * Safe on its defaults, against the real service process (`core/cli/deployer.ts`) where the question is
 * about that process (its environ, its memory): secrets out of reach of builds and the app, state not
 * writable by them, credentials never shown, no CORS, bodies refused before they are read, an upload cap
 * that bounds memory, slow senders cut at WEBHOOK_TIMEOUT, a connection cap, rate limits that forged
 * deliveries cannot spend, replays that never roll back, releases only from the branch.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { sign } from '@octokit/webhooks-methods';
import { Repo, appSays, fetchJson, freePort, githubExample, githubPush, memoryOf, nodeApp, runCli, settled, startDeployer, tempDir, testEnv, waitFor, type TestDeployer } from './support.ts';

const SECRET = 's3cret-webhook-value';
const KEY = 's3cret-api-key-value';
const TOKEN = 's3cret-git-token-value';

/** A project whose build looks for the service's secrets in every process it can read and tries to write the service's files. */
function snoopingApp(targets: string[]): Record<string, string> {
  const probe = `const fs = require('fs');
const out = { uid: process.getuid(), envKeys: Object.keys(process.env), secretSeen: [], writes: {} };
for (const e of fs.readdirSync('/proc')) {
  if (!/^\\d+$/.test(e)) continue;
  let env = '';
  try { env = fs.readFileSync('/proc/' + e + '/environ', 'utf8'); } catch { continue; }
  for (const s of ${JSON.stringify([SECRET, KEY, TOKEN])}) if (env.includes(s)) out.secretSeen.push(e);
}
for (const t of ${JSON.stringify(targets)}) {
  try { fs.appendFileSync(t, ''); out.writes[t] = 'written'; } catch (err) { out.writes[t] = err.code; }
}
fs.writeFileSync('snoop.json', JSON.stringify(out));
`;
  const app = nodeApp('snoop', { build: "require('./probe.js')" });
  return {
    ...app,
    'probe.js': probe,
    'server.js': `require('http').createServer((q, s) => s.end(JSON.stringify({ commit: process.env.GIT_COMMIT, uid: process.getuid(), env: process.env }))).listen(Number(process.env.PORT), '127.0.0.1');\n`,
  };
}

/** A git server over HTTP that wants Basic credentials (git http-backend behind a node server). */
function gitHttpServer(projectRoot: string, user: string, token: string): Promise<{ port: number; close: () => void; seen: string[] }> {
  const seen: string[] = [];
  const want = `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`;
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.headers.authorization !== want) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"' }).end('auth required\n');
      return;
    }
    const url = new URL(req.url!, 'http://x');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH, GIT_PROJECT_ROOT: projectRoot, GIT_HTTP_EXPORT_ALL: '1', PATH_INFO: url.pathname, QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method, CONTENT_TYPE: req.headers['content-type'] ?? '', HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        REMOTE_USER: user, REMOTE_ADDR: '127.0.0.1', GIT_HTTP_MAX_REQUEST_BUFFER: '100M',
      },
    });
    req.pipe(cgi.stdin);
    let head: Buffer = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (b: Buffer) => {
      if (headersDone) return void res.write(b);
      head = Buffer.concat([head, b]);
      const i = head.indexOf('\r\n\r\n');
      if (i < 0) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, i).toString().split('\r\n')) {
        const [k, ...v] = line.split(':');
        if (/^status$/i.test(k)) status = Number(v.join(':').trim().split(' ')[0]);
        else res.setHeader(k, v.join(':').trim());
      }
      res.writeHead(status);
      res.write(head.subarray(i + 4));
    });
    cgi.stdout.on('end', () => res.end());
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as net.AddressInfo).port, close: () => server.close(), seen })));
}

describe('deployer safety (real service process)', function () {
  this.timeout(120_000);
  const cleanup: Array<() => unknown> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });

  it('builds and the app run unprivileged, cannot read the secrets or write the service state; credentials appear nowhere', async function () {
    if (process.getuid?.() !== 0) this.skip(); // dropping privileges needs root (the test machine runs as root)
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    fs.mkdirSync(path.join(repo.dir, 'srv'));
    const root = tempDir('deployer-sec-');
    const stateFile = path.join(root, 'state', 'deployer', 'state.json');
    const targets = [stateFile, path.join(root, 'logs', 'app.log'), path.join(root, 'state', 'deployer', 'app.pid'), path.join(root, 'repo.git', 'HEAD')];
    const commit = repo.commit(snoopingApp(targets), 'snoop');
    const git = await gitHttpServer(path.dirname(repo.dir), 'deploy-bot', TOKEN);
    cleanup.push(() => git.close());
    const port = await freePort();
    const env = testEnv(repo, await freePort(), root, {
      GIT_REPO_URL: `http://127.0.0.1:${git.port}/${path.basename(repo.dir)}`,
      GIT_USERNAME: 'deploy-bot',
      GIT_TOKEN: TOKEN,
      WEBHOOK_PORT: String(port),
      WEBHOOK_SIGNATURE_VERIFY: 'true',
      WEBHOOK_SECRET: SECRET,
      API_KEY: KEY,
      LOG_LEVEL: 'debug',
    });
    const run = runCli(env);
    cleanup.push(async () => {
      run.child.kill('SIGTERM');
      await run.exited;
      fs.rmSync(root, { recursive: true, force: true });
    });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(async () => (await fetch(`${base}/health`).catch(() => null))?.ok, 'the service');
    const body = JSON.stringify(githubPush(repo, commit));
    const ack = await fetch(`${base}/webhook`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-hub-signature-256': await sign(SECRET, body) } });
    assert.equal(ack.status, 200);
    const auth = { authorization: `Bearer ${KEY}` };
    const s = await waitFor(async () => {
      const st = await fetchJson(`${base}/status`, auth);
      return st.status === 'idle' && st.current_release ? st : null;
    }, 'the deployment');
    assert.equal(s.current_release, `001-${commit}`, JSON.stringify(s));

    const snoop = JSON.parse(fs.readFileSync(path.join(root, 'releases', `001-${commit}`, 'snoop.json'), 'utf8'));
    assert.notEqual(snoop.uid, 0, 'the build ran as root');
    assert.deepEqual(snoop.secretSeen, [], 'a build read a secret from a process environment');
    for (const t of targets) assert.equal(snoop.writes[t], 'EACCES', `the build could write ${t}`);
    for (const k of ['WEBHOOK_SECRET', 'API_KEY', 'GIT_TOKEN', 'GIT_USERNAME', 'GIT_REPO_URL']) assert.ok(!snoop.envKeys.includes(k), `the build saw ${k}`);

    const app = await appSays(Number(env.APP_PORT));
    assert.notEqual(app.uid, 0, 'the app runs as root');
    const appEnv = JSON.stringify(app.env);
    for (const secret of [SECRET, KEY, TOKEN]) assert.ok(!appEnv.includes(secret), 'the app env holds a secret');

    // The token never shows: build log, /status, /logs, service log, app log.
    const texts = [
      JSON.stringify(await fetchJson(`${base}/status`, auth)),
      await (await fetch(`${base}/logs/1`, { headers: auth })).text(),
      run.output(),
      fs.readFileSync(path.join(root, 'logs', 'app.log'), 'utf8'),
      ...fs.readdirSync(path.join(root, 'logs')).map((f) => fs.readFileSync(path.join(root, 'logs', f), 'utf8')),
    ];
    for (const t of texts) for (const secret of [TOKEN, Buffer.from(`deploy-bot:${TOKEN}`).toString('base64'), SECRET, KEY]) assert.ok(!t.includes(secret), `a secret leaked into: ${t.slice(0, 200)}`);
    assert.ok(git.seen.length > 0, 'the git server was asked');
    assert.match(await (await fetch(`${base}/logs/1`, { headers: auth })).text(), /git .*fetch/);
  });

  it('a wrong token fails at git_pull without showing it; URL credentials are redacted too', async () => {
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    repo.commit(nodeApp('a'));
    const git = await gitHttpServer(path.dirname(repo.dir), 'deploy-bot', TOKEN);
    cleanup.push(() => git.close());
    const d = await startDeployer(testEnv(repo, await freePort(), tempDir(), { GIT_REPO_URL: `http://deploy-bot:wrong-pass-123@127.0.0.1:${git.port}/${path.basename(repo.dir)}` }));
    cleanup.push(() => d.close());
    await d.github('push', { ref: 'refs/heads/main' });
    const s = await settled(d);
    assert.equal(s.last_failed_deployment.reason, 'git_failed');
    // Failed before the commit was known: strings stay strings, and the log is reachable.
    assert.equal(s.last_failed_deployment.commit, '');
    assert.equal(s.last_failed_deployment.commit_full, '');
    assert.equal(s.last_deployment.commit, '');
    const log = await d.get(`/logs/${s.last_failed_deployment.log}?format=json`);
    assert.equal(log.status, 200);
    assert.match(log.json.content, /git_failed/);
    assert.ok(!log.json.content.includes('wrong-pass-123') && !JSON.stringify(s).includes('wrong-pass-123'));
  });

  it('answers no CORS: no Access-Control headers on the webhook, /status or /logs, and no preflight', async () => {
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    const d = await startDeployer(testEnv(repo, await freePort(), tempDir(), { GIT_BRANCH: 'prod' }));
    cleanup.push(() => d.close());
    const origin = { origin: 'https://evil.example' };
    for (const r of [
      await d.post('/webhook', JSON.stringify(githubExample('ping')), { ...origin, 'x-github-event': 'ping' }),
      await d.get('/status', origin),
      await d.get('/logs/1', origin),
      await fetch(`${d.url}/webhook`, { method: 'OPTIONS', headers: { ...origin, 'access-control-request-method': 'POST' } }),
    ]) {
      for (const [k] of r.headers) assert.ok(!k.startsWith('access-control-'), `${k} answered`);
      assert.notEqual(r.status, 204);
    }
  });

  it('refuses rate-limited and unsigned callers before reading their body; slow senders are cut at WEBHOOK_TIMEOUT; connections are capped', async () => {
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    const d = await startDeployer(testEnv(repo, await freePort(), tempDir(), { GIT_BRANCH: 'prod', WEBHOOK_RATE_LIMIT: '2', WEBHOOK_TIMEOUT: '2000', WEBHOOK_MAX_CONNECTIONS: '20' }));
    cleanup.push(() => d.close());
    const port = Number(new URL(d.url).port);
    // A sender trickling its body is cut near WEBHOOK_TIMEOUT (node checks 10 times per timeout here; it used to be every 30 s).
    const t0 = Date.now();
    const cut = await new Promise<number>((resolve) => {
      const sock = net.connect(port, '127.0.0.1', () => {
        sock.write('POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n');
        const t = setInterval(() => sock.write('{'), 100);
        sock.on('close', () => {
          clearInterval(t);
          resolve(Date.now() - t0);
        });
        sock.on('error', () => {});
      });
    });
    // The upper bound only tells "near the timeout" from "at the old 30 s check" (a busy machine is slow).
    assert.ok(cut >= 1900 && cut < 20_000, `slow sender cut after ${cut} ms (WEBHOOK_TIMEOUT 2000)`);

    // `Expect: 100-continue`: the client sends its body only once the server asks for it. 4 MB, above any
    // default body limit and well under the webhook's 25 MB: 20 MB took over the 2 s WEBHOOK_TIMEOUT to
    // arrive once, with the suite's four shards on two cores (answered 408, not 400).
    const BODY = 4 * 1024 * 1024;
    const ask = (headers: Record<string, string> = {}) =>
      new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
        let continued = false;
        const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/webhook', headers: { expect: '100-continue', 'content-type': 'application/json', 'content-length': String(BODY), ...headers } });
        req.on('continue', () => {
          continued = true;
          req.end(Buffer.alloc(BODY, 32));
        });
        req.on('response', (res) => {
          res.resume();
          req.destroy();
          resolve({ status: res.statusCode!, continued });
        });
        req.on('error', reject);
      });
    assert.deepEqual(await ask(), { status: 400, continued: true }); // the one allowed request: read, not JSON
    assert.deepEqual(await ask(), { status: 429, continued: false });

    // Connections over WEBHOOK_MAX_CONNECTIONS are closed at once; the service keeps answering.
    const socks = await Promise.all(Array.from({ length: 40 }, () => new Promise<net.Socket>((r) => {
      const s = net.connect(port, '127.0.0.1', () => r(s));
      s.on('error', () => {});
    })));
    // Waits for the condition: counting once after 200 ms failed in CI (21 open) while the busy service had
    // not yet accepted, and closed, every connection over the cap.
    let open = socks.length;
    await waitFor(() => (open = socks.filter((s) => !s.destroyed && s.readyState === 'open').length) <= 20, 'the cap to apply').catch(() => {});
    // Some stay open: the cap closed those over it, not WEBHOOK_TIMEOUT (2 s) all of them.
    assert.ok(open <= 20 && open > 0, `${open} connections open`);
    for (const s of socks) s.destroy();
    await waitFor(async () => (await d.get('/health').catch(() => null))?.status === 200, 'the service after the flood');
  });

  it('with verification on: unsigned deliveries are refused (small ones drained, so the git host reads its 401 or 429), forged signatures do not spend the budget, and after a burst the newest commit deploys', async () => {
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    const first = repo.commit(nodeApp('first'), 'first');
    const d = await startDeployer(testEnv(repo, await freePort(), tempDir(), { WEBHOOK_SIGNATURE_VERIFY: 'true', WEBHOOK_SECRET: SECRET, WEBHOOK_RATE_LIMIT: '3', DEBOUNCE_DELAY: '0.3' }));
    cleanup.push(() => d.close());
    const unsigned = await d.post('/webhook', JSON.stringify(githubPush(repo, first)), { 'x-github-event': 'push' });
    assert.equal(unsigned.status, 401);
    for (let i = 0; i < 20; i++) {
      const forged = await d.github('push', githubPush(repo, first), { secret: 'not-the-secret' });
      assert.equal(forged.status, 401);
    }
    // The 20 forgeries spent nothing: the authentic deliveries go through.
    const commits: string[] = [];
    for (let i = 0; i < 12; i++) commits.push(repo.commit(nodeApp(`burst ${i}`), `burst ${i}`));
    const acks = [];
    for (const c of commits) acks.push((await d.github('push', githubPush(repo, c), { secret: SECRET })).status);
    assert.deepEqual(acks.slice(0, 3), [200, 200, 200]);
    assert.ok(acks.slice(3).every((st) => st === 429), acks.join(' '));
    const s = await waitFor(async () => {
      const st = await settled(d);
      return st.releases[0]?.commit === commits[11] ? st : null;
    }, 'the newest commit to go live');
    assert.equal((await appSays(d.appPort)).commit, commits[11]);
    assert.ok(s.releases.length <= 3, `${s.releases.length} deployments for a burst`);
  });

  it('replays and out-of-order deliveries never roll back; a release of a tag off the branch is not deployed', async () => {
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    const c1 = repo.commit(nodeApp('one'), 'one');
    const c2 = repo.commit(nodeApp('two'), 'two');
    const d = await startDeployer(testEnv(repo, await freePort(), tempDir(), { DEBOUNCE_DELAY: '0' }));
    cleanup.push(() => d.close());
    await d.github('push', githubPush(repo, c2));
    await settled(d);
    const old = await d.github('push', githubPush(repo, c1)); // late delivery of an older push
    assert.equal(old.status, 200);
    await d.github('push', githubPush(repo, c2)); // replay with a new delivery id
    let s = await settled(d);
    assert.deepEqual(s.releases.map((r: any) => r.commit), [c2]);
    assert.equal((await appSays(d.appPort)).commit, c2);
    assert.equal(s.failed_commits_count, undefined);

    repo.git('checkout', '-q', '-b', 'other');
    const side = repo.commit(nodeApp('side'), 'side');
    repo.git('tag', 'v9', side);
    repo.git('checkout', '-q', 'main');
    const release = githubExample('release', (e) => e.action === 'published');
    release.release.tag_name = 'v9';
    release.release.target_commitish = 'main'; // claims the branch; the tag's commit is elsewhere
    await d.github('release', release);
    s = await settled(d);
    assert.equal(s.last_failed_deployment.reason, 'not_on_branch');
    assert.equal((await appSays(d.appPort)).commit, c2);
  });

  it('100 concurrent 24 MB unsigned uploads keep the service under 250 MB RSS', async () => {
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    const port = await freePort();
    // The default rate limit (10 a minute) and upload cap (2 read at once), as in the report.
    const env = testEnv(repo, await freePort(), tempDir(), { WEBHOOK_PORT: String(port), WEBHOOK_RATE_LIMIT: '10', GIT_BRANCH: 'prod' });
    const run = runCli(env);
    cleanup.push(async () => {
      run.child.kill('SIGTERM');
      await run.exited;
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok, 'the service');
    const before = memoryOf(run.child.pid!);
    const body = Buffer.alloc(24 * 1024 * 1024, 'x');
    const agent = new http.Agent({ keepAlive: false, maxSockets: 200 });
    const statuses = await Promise.all(
      Array.from({ length: 100 }, () =>
        new Promise<number>((resolve) => {
          const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/webhook', agent, headers: { 'content-type': 'application/json', 'content-length': String(body.length) } }, (res) => {
            res.resume();
            resolve(res.statusCode!);
          });
          req.on('error', () => resolve(0)); // cut while sending: refused without being read
          req.end(body);
        }),
      ),
    );
    const after = memoryOf(run.child.pid!);
    assert.ok(after.peak < 250, `peak RSS ${after.peak.toFixed(0)} MB (idle ${before.now.toFixed(0)} MB)`);
    assert.ok(statuses.every((s) => [0, 400, 429, 503].includes(s)), statuses.join(' '));
    assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
  });
});
