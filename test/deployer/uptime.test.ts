/**
 * `npm run deployer` as a new user runs it: the real entry point as its own process, started with only the
 * required variables (GIT_REPO_URL, APP_PORT; plus WEBHOOK_PORT, because this machine's tests own the ports
 * 22000-22999, not the default 9001), left running for longer than any timer in it (node's HTTP server
 * checks its request timeouts every 30 s by default: the run that aborted did so 30 s after start), then
 * 1,000 webhooks. It must still answer /health.
 *
 * The service starts in a root-level `before`, so its 65 s run overlaps the other test files of the area;
 * the check at the end waits only for what is left of the 65 s.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import { Repo, freePort, githubPush, nodeApp, runCli, tempDir, waitFor } from './support.ts';

const RUN_MS = 65_000;
let svc: ReturnType<typeof runCli> | undefined;
let started = 0;
let port = 0;
let appPort = 0;
let repo: Repo;
let commit = '';
let cwd = '';

const health = async () => {
  const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
  return res?.ok ? res.json() : null;
};

before(async function () {
  this.timeout(60_000);
  repo = new Repo();
  commit = repo.commit(nodeApp('uptime'));
  cwd = tempDir('deployer-uptime-');
  fs.chmodSync(cwd, 0o755); // DEPLOY_ROOT defaults to ./deploy: the app's user must reach it
  port = await freePort();
  appPort = await freePort();
  svc = runCli({ GIT_REPO_URL: repo.dir, APP_PORT: String(appPort), WEBHOOK_PORT: String(port) }, cwd);
  started = Date.now();
  await waitFor(health, 'the service to answer');
  // Default settings: no verification, 5 s debounce, health checks 3 × 10 s.
  const res = await fetch(`http://127.0.0.1:${port}/webhook`, { method: 'POST', body: JSON.stringify(githubPush(repo, commit)), headers: { 'content-type': 'application/json', 'x-github-event': 'push' } });
  assert.equal(res.status, 200);
});

after(async () => {
  if (svc && svc.child.exitCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  repo?.remove();
  if (cwd) fs.rmSync(cwd, { recursive: true, force: true });
});

describe('npm run deployer on its defaults (real process, 65 s and 1,000 webhooks)', () => {
  it('still answers /health after 65 s and after 1,000 webhooks, with the app deployed', async function () {
    this.timeout(RUN_MS + 180_000);
    // The condition is time itself: the service must outlive its timers. Health is checked all along.
    while (Date.now() - started < RUN_MS) {
      assert.ok(await health(), `no /health answer ${Math.round((Date.now() - started) / 1000)} s after start:\n${svc!.output().slice(-2000)}`);
      await new Promise((r) => setTimeout(r, Math.min(2000, Math.max(0, RUN_MS - (Date.now() - started)))));
    }
    assert.equal(svc!.child.exitCode, null, `the service exited:\n${svc!.output().slice(-2000)}`);
    const h = await waitFor(async () => {
      const x = await health();
      return x?.healthy ? x : null;
    }, 'the deployed app');
    assert.deepEqual(h, { healthy: true, app_status: 'running', app_port: appPort, supervisor_status: 'RUNNING', deployment_in_progress: false, deployment_stage: 'none' });

    // 1,000 webhooks, 10 at a time: the default rate limit (10 a minute) answers most with 429.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
    const body = JSON.stringify(githubPush(repo, commit));
    const counts: Record<number, number> = {};
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next++ < 1000) {
          const status = await new Promise<number>((resolve) => {
            const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/webhook', agent, headers: { 'content-type': 'application/json', 'x-github-event': 'push' } }, (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode!));
            });
            req.on('error', () => resolve(0));
            req.end(body);
          });
          counts[status] = (counts[status] ?? 0) + 1;
        }
      }),
    );
    agent.destroy();
    assert.equal((counts[200] ?? 0) + (counts[429] ?? 0), 1000, JSON.stringify(counts));
    assert.ok(await health(), 'no /health answer after 1,000 webhooks');
    assert.equal(svc!.child.exitCode, null);
    assert.ok(Date.now() - started >= RUN_MS);
  });
});
