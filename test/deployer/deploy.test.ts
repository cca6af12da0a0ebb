/**
 * Real deployments: a git repository in a temp folder holding a tiny node app that serves its commit id,
 * fetched and checked out by real git, installed with npm, run as a supervised child on a free port.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { sign } from '@octokit/webhooks-methods';
import { killGroup, procStat } from '../../plugins/deployer/proc.ts';
import { Repo, appAnswer, appPids, appSays, buildPids, findAppPid, fixture, freePort, runCli, githubExample, githubPush, nodeApp, settled, startDeployer, tempDir, testEnv, waitFor, type TestDeployer } from './support.ts';

const SECRET = 'deploy-secret';

async function deployer(repo: Repo, extra: Record<string, string> = {}, root = tempDir()): Promise<TestDeployer> {
  return startDeployer(testEnv(repo, await freePort(), root, { WEBHOOK_SIGNATURE_VERIFY: 'true', WEBHOOK_SECRET: SECRET, ...extra }));
}

/** Probe the app every 20 ms; `stop` gives the commits it answered (null while down; a timed-out probe is no answer), in order. */
function watchApp(port: number) {
  const seen: Array<string | null> = [];
  let on = true;
  const loop = (async () => {
    while (on) {
      const a = await appAnswer(port);
      if (a !== 'slow') seen.push(a?.commit ?? null);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      on = false;
      await loop;
      return seen;
    },
  };
}

const push = (d: TestDeployer, repo: Repo, commit: string, delivery?: string) => d.github('push', githubPush(repo, commit), { secret: SECRET, delivery });

describe('deployer deployments (real git, npm and app)', function () {
  this.timeout(120_000);
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f();
  });
  const track = (d: TestDeployer, repo: Repo) => {
    cleanup.push(() => repo.remove(), () => d.close());
    return d;
  };

  it('a push deploys: the app answers the new commit; releases, status, logs and install reuse follow', async () => {
    const repo = new Repo();
    const a = repo.commit(nodeApp('v1', { build: "require('fs').writeFileSync('built.txt','')" }), 'first version');
    const d = track(await deployer(repo), repo);

    const ack = await push(d, repo, a, 'delivery-a');
    assert.deepEqual(ack.json, { status: 'success', message: 'Deployment queued', delivery_id: 'delivery-a' });
    let s = await settled(d);
    assert.deepEqual(await appSays(d.appPort), { commit: a, version: 'v1', release: `001-${a}`, built: true });
    assert.equal(s.current_release, `001-${a}`);
    assert.ok(fs.existsSync(path.join(d.root, 'releases', `001-${a}`, 'server.js')));

    // Same lock file: the install is skipped. A changed lock file installs again.
    const b = repo.commit({ 'version.txt': 'v2' }, 'second version');
    await push(d, repo, b);
    await settled(d);
    const c = repo.commit(nodeApp('v3', { lock: 'changed' }), 'third version');
    await push(d, repo, c);
    s = await settled(d);
    assert.equal((await appSays(d.appPort)).commit, c);

    assert.equal(s.status, 'idle');
    assert.equal(s.current_release, `003-${c}`);
    assert.deepEqual(s.last_deployment, {
      commit: c.slice(0, 7), commit_full: c, updated_at: s.last_deployment.updated_at, build_duration_seconds: s.last_deployment.build_duration_seconds,
      build_status: 'success', release_id: `003-${c}`,
    });
    assert.match(s.last_deployment.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    assert.deepEqual(s.releases.map((r: any) => [r.id, r.commit, r.commit_message]), [
      [`003-${c}`, c, 'commit ' + c.slice(0, 7)],
      [`002-${b}`, b, 'commit ' + b.slice(0, 7)],
      [`001-${a}`, a, 'commit ' + a.slice(0, 7)],
    ]);
    for (const r of s.releases) assert.ok(Number.isInteger(r.build_duration_seconds) && /\+00:00$/.test(r.deployed_at));
    assert.equal(s.last_failed_deployment, undefined);
    assert.deepEqual(s.queue, { pending: null, debouncing: false });

    // Every identifier form reaches the same log.
    const forms = ['2', '002', `002-${b}`, b, b.slice(0, 7)];
    for (const id of forms) {
      const r = await d.get(`/logs/${id}?format=json`);
      assert.equal(r.status, 200, id);
      assert.equal(r.json.identifier, id);
      assert.equal(r.json.log_file, `002-${b}.log`);
      assert.equal(r.json.line_count, r.json.lines.length);
      assert.deepEqual(r.json.content.replace(/\n$/, '').split('\n'), r.json.lines);
    }
    const log2 = (await d.get(`/logs/2?format=json`)).json.content;
    assert.match(log2, /lock files unchanged since release 001-.*install skipped/);
    for (const st of ['starting', 'git_pull', 'installing_dependencies', 'stopping_app', 'building', 'starting_app', 'health_check'])
      assert.match(log2, new RegExp(`stage ${st} finished in \\d+\\.\\d{3} s`));
    assert.match((await d.get(`/logs/3?format=json`)).json.content, /\$ npm ci/);

    const text = await d.get('/logs/1');
    assert.match(text.headers.get('content-type')!, /^text\/plain/);
    assert.match(text.text, /^=== Build Metadata ===\n\{\n {2}"commit": "[0-9a-f]{40}",\n {2}"project_type": "node",\n {2}"serve_type": "node",/);
    assert.match(text.text, /\n\n=== Build Log ===\n/);
    assert.match(text.text, /=== Installing Dependencies ===/);
    assert.match(text.text, /=== Building Application ===/);
    const tail = await d.get('/logs/1?tail=2&format=json');
    assert.equal(tail.json.line_count, 2);
    assert.deepEqual(tail.json.lines, tail.json.content.split('\n'));

    const health = await d.get('/health');
    assert.deepEqual(health.json, { healthy: true, app_status: 'running', app_port: d.appPort, supervisor_status: 'RUNNING', deployment_in_progress: false, deployment_stage: 'none' });

    // A fourth release: only the last three are kept on disk.
    const e = repo.commit({ 'version.txt': 'v4' });
    await push(d, repo, e);
    s = await settled(d);
    assert.deepEqual(s.releases.map((r: any) => r.id), [`004-${e}`, `003-${c}`, `002-${b}`]);
    assert.deepEqual(fs.readdirSync(path.join(d.root, 'releases')).sort(), [`002-${b}`, `003-${c}`, `004-${e}`]);
  });

  it('a failing build rolls back: the previous release answers again and the failure is recorded', async () => {
    const repo = new Repo();
    const good = repo.commit(nodeApp('good'));
    const d = track(await deployer(repo), repo);
    await push(d, repo, good);
    await settled(d);
    const appPid = findAppPid(d.appPort);
    const bad = repo.commit(nodeApp('bad', { build: 'process.exit(3)' }), 'broken build');
    await push(d, repo, bad);
    const s = await settled(d);
    // The build failed before stopping_app: the old app was never stopped (same process).
    assert.equal(findAppPid(d.appPort), appPid);

    assert.deepEqual(await appSays(d.appPort), { commit: good, version: 'good', release: `001-${good}`, built: false });
    assert.equal(s.current_release, `001-${good}`);
    assert.equal(s.failed_commits_count, 1);
    assert.deepEqual(Object.keys(s.last_failed_deployment).sort(), ['commit', 'commit_full', 'failed_at', 'log', 'reason']);
    assert.equal(s.last_failed_deployment.log, `${bad}-FAILED`);
    assert.equal(s.last_failed_deployment.commit_full, bad);
    assert.equal(s.last_failed_deployment.commit, bad.slice(0, 7));
    assert.equal(s.last_failed_deployment.reason, 'build_failed');
    assert.match(s.last_failed_deployment.failed_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(s.last_deployment.build_status, 'failed');
    assert.deepEqual(fs.readdirSync(path.join(d.root, 'releases')), [`001-${good}`]);

    for (const id of [`${bad}-FAILED`, `${bad.slice(0, 7)}-FAILED`, bad, bad.slice(0, 7)]) {
      const r = await d.get(`/logs/${id}?format=json`);
      assert.equal(r.status, 200, id);
      assert.equal(r.json.log_file, `${bad}-FAILED.log`);
      assert.match(r.json.content, /build_failed: build failed \(exit code 3\)/);
      assert.match(r.json.content, /the running release 001-\S+ was not touched and keeps serving/);
      assert.doesNotMatch(r.json.content, /stage stopping_app/);
    }
    // The next good commit deploys: a failure never blocks the queue.
    const fixed = repo.commit(nodeApp('fixed'));
    await push(d, repo, fixed);
    assert.equal((await settled(d)).current_release, `002-${fixed}`);
    assert.equal((await appSays(d.appPort)).commit, fixed);
  });

  it('a failing health check rolls back; the first deployment failing leaves the app stopped', async () => {
    const repo = new Repo();
    const silent = repo.commit(nodeApp('silent', { serve: false }));
    // The default test window (10 × 0.3 s): a tighter one fails good releases on a loaded machine.
    const d = track(await deployer(repo), repo);
    await push(d, repo, silent);
    let s = await settled(d);
    assert.equal(s.current_release, '');
    assert.equal(s.last_failed_deployment.reason, 'health_check_failed');
    assert.equal((await d.get('/health')).json.supervisor_status, 'STOPPED');

    const good = repo.commit(nodeApp('good'));
    await push(d, repo, good);
    await settled(d);
    const silent2 = repo.commit(nodeApp('silent again', { serve: false }));
    await push(d, repo, silent2);
    s = await settled(d);
    assert.equal(s.current_release, `001-${good}`);
    assert.equal(s.last_failed_deployment.commit_full, silent2);
    assert.equal(s.last_failed_deployment.reason, 'health_check_failed');
    assert.equal(s.failed_commits_count, 2);
    assert.equal((await appSays(d.appPort)).commit, good);
    assert.equal((await d.get('/health')).json.healthy, true);
  });

  it('the DEPLOYMENT_TIMEOUT watchdog stops a hung build (its whole group); the old app never stops', async () => {
    const repo = new Repo();
    const good = repo.commit(nodeApp('good'));
    // Long enough for the good release on a loaded machine (6 s was not, at load 11: npm ci and the health
    // check of the first release ran out, and the test then saw no app at all), short for the test.
    const d = track(await deployer(repo, { DEPLOYMENT_TIMEOUT: '15' }), repo);
    await push(d, repo, good);
    assert.equal((await settled(d)).current_release, `001-${good}`, 'the good release is live before the hung one');
    const hung = repo.commit(nodeApp('hung', { build: 'setTimeout(() => {}, 600000)' }));
    const watch = watchApp(d.appPort);
    await push(d, repo, hung);
    const s = await settled(d);
    const seen = await watch.stop();
    // A hung build never stops the app: it answered the old commit throughout, and the build's group is gone.
    assert.ok(seen.length > 5 && seen.every((c) => c === good), `answers during the deployment: ${[...new Set(seen)].join(', ')}`);
    assert.deepEqual(buildPids(d.root), []);
    assert.equal(s.last_failed_deployment.reason, 'deployment_timeout');
    assert.equal(s.current_release, `001-${good}`);
    assert.equal((await appSays(d.appPort)).commit, good);
  });

  it('zero downtime: the old release serves while the new one builds; stopping_app comes after building', async () => {
    const repo = new Repo();
    const a = repo.commit(nodeApp('a'));
    const d = track(await deployer(repo, { DEBOUNCE_DELAY: '0' }), repo);
    await push(d, repo, a);
    await settled(d);
    const b = repo.commit(nodeApp('b', { build: 'setTimeout(() => {}, 1500)' }));
    const watch = watchApp(d.appPort);
    await push(d, repo, b);
    // While the new release builds, the old one answers.
    await waitFor(async () => (await d.get('/status')).json.stage === 'building', 'the building stage');
    assert.equal((await appSays(d.appPort))?.commit, a);
    assert.equal((await d.get('/health')).json.app_status, 'running');
    await settled(d);
    await waitFor(async () => (await appSays(d.appPort))?.commit === b, 'the new release');
    const seen = await watch.stop();
    const firstB = seen.indexOf(b);
    assert.ok(seen.slice(0, firstB).filter((c) => c === a).length >= 3, 'the old release answered during the build');
    assert.ok(seen.slice(firstB).every((c) => c === b), 'never back to the old release');
    const log = (await d.get('/logs/2?format=json')).json.content as string;
    const order = [...log.matchAll(/stage (\w+) started/g)].map((m) => m[1]);
    assert.deepEqual(order, ['starting', 'git_pull', 'installing_dependencies', 'building', 'stopping_app', 'starting_app', 'health_check', 'completed']);
  });

  it('20 pushes in a burst end in at most two deployments, the last one the newest commit', async () => {
    const repo = new Repo();
    const commits: string[] = [];
    for (let i = 0; i < 20; i++) commits.push(repo.commit(nodeApp(`burst ${i}`), `burst ${i}`));
    const d = track(await deployer(repo, { DEBOUNCE_DELAY: '0.5' }), repo);
    const acks = await Promise.all(commits.map((c) => push(d, repo, c)));
    assert.ok(acks.every((r) => r.status === 200 && r.json.message === 'Deployment queued'));
    const s = await settled(d);
    assert.ok(s.releases.length >= 1 && s.releases.length <= 2, `${s.releases.length} deployments`);
    assert.equal(s.releases[0].commit, commits[19]);
    assert.equal((await appSays(d.appPort)).commit, commits[19]);
  });

  it('a push during a deployment waits in the single slot; a newer one replaces it', async () => {
    const repo = new Repo();
    const slow = repo.commit(nodeApp('slow', { build: 'setTimeout(() => {}, 2500)' }), 'slow build');
    const d = track(await deployer(repo, { DEBOUNCE_DELAY: '0' }), repo);
    await push(d, repo, slow);
    const deploying = await waitFor(async () => {
      const s = (await d.get('/status')).json;
      return s.status === 'deploying' && s.stage === 'building' ? s : null;
    }, 'the building stage');
    assert.deepEqual(Object.keys(deploying).sort(), ['building_release', 'commit', 'commit_full', 'duration_seconds', 'progress_percent', 'queue', 'rollback_commit', 'stage', 'started_at', 'status', 'timeout_seconds']);
    assert.deepEqual(Object.keys(deploying.building_release).sort(), ['commit', 'commit_full', 'elapsed_seconds', 'release_id', 'stage']);
    assert.equal(deploying.building_release.stage, 'building');
    assert.equal(deploying.building_release.release_id, `001-${slow}`);
    assert.equal(deploying.commit_full, slow);
    assert.equal(deploying.commit, slow.slice(0, 7));
    assert.equal(deploying.rollback_commit, '');
    assert.equal(deploying.timeout_seconds, 60);
    // floor(elapsed / timeout * 100), elapsed between the whole seconds shown and the next.
    const { progress_percent: pct, duration_seconds: secs } = deploying;
    assert.ok(pct >= Math.floor((secs / 60) * 100) && pct <= Math.floor(((secs + 1) / 60) * 100), `${pct}% at ${secs} s`);
    assert.ok(Math.abs(deploying.started_at - Date.now() / 1000) < 60);
    const health = (await d.get('/health')).json;
    assert.equal(health.deployment_in_progress, true);
    assert.equal(health.deployment_stage, 'building');

    const b = repo.commit(nodeApp('b'), 'b');
    const c = repo.commit(nodeApp('c'), 'c');
    await push(d, repo, b, 'slot-b');
    assert.equal((await d.get('/status')).json.queue.pending.commit_full, b);
    await push(d, repo, c, 'slot-c');
    const waiting = (await d.get('/status')).json;
    assert.equal(waiting.status, 'deploying');
    assert.equal(waiting.commit_full, slow);
    assert.deepEqual(waiting.queue.pending, { commit: c.slice(0, 7), commit_full: c, delivery_id: 'slot-c', received_at: waiting.queue.pending.received_at });

    const s = await settled(d);
    assert.deepEqual(s.releases.map((r: any) => r.commit), [c, slow]);
    assert.equal((await appSays(d.appPort)).commit, c);
  });

  it('the same delivery id twice deploys once; release, GitLab and Bitbucket deliveries deploy', async () => {
    const repo = new Repo();
    const a = repo.commit(nodeApp('a'));
    const d = track(await deployer(repo), repo);
    await push(d, repo, a, 'once');
    const again = await push(d, repo, a, 'once');
    assert.match(again.json.message, /already received/);
    let s = await settled(d);
    assert.equal(s.releases.length, 1);

    // A published release deploys the commit its tag names.
    const tagged = repo.commit(nodeApp('tagged'));
    repo.git('tag', 'v1.0.0', tagged);
    repo.commit(nodeApp('after the tag'));
    const release = githubExample('release', (e) => e.action === 'published');
    release.release.tag_name = 'v1.0.0';
    release.release.target_commitish = 'main';
    await d.github('release', release, { secret: SECRET });
    s = await settled(d);
    assert.equal(s.releases[0].commit, tagged);

    const gl = repo.commit(nodeApp('gitlab'));
    const glBody = { ...fixture('gitlab-push.json'), after: gl, checkout_sha: gl };
    const r1 = await d.post('/webhook', JSON.stringify(glBody), { 'x-gitlab-event': 'Push Hook', 'x-gitlab-token': SECRET, 'x-gitlab-event-uuid': 'gl-1' });
    assert.equal(r1.json.delivery_id, 'gl-1');
    s = await settled(d);
    assert.equal(s.releases[0].commit, gl);

    const bb = repo.commit(nodeApp('bitbucket'));
    const bbBody = fixture('bitbucket-push.json');
    bbBody.push.changes[0].new.target.hash = bb;
    const raw = JSON.stringify(bbBody);
    await d.post('/webhook', raw, { 'x-event-key': 'repo:push', 'x-hub-signature': await sign(SECRET, raw), 'x-request-uuid': 'bb-1' });
    s = await settled(d);
    assert.equal(s.releases[0].commit, bb);
    assert.equal((await appSays(d.appPort)).commit, bb);

    // A commit that is not on the tracked branch is refused at git_pull; the app keeps serving.
    repo.git('checkout', '-q', '-b', 'side');
    const side = repo.commit(nodeApp('side'));
    await push(d, repo, side);
    s = await settled(d);
    assert.equal(s.last_failed_deployment.reason, 'not_on_branch');
    assert.equal((await appSays(d.appPort)).commit, bb);
  });

  it('detects static, python and node-static projects and serves each with its default commands', async () => {
    const repo = new Repo();
    const text = async (p = '/') => {
      const res = await fetch(`http://127.0.0.1:${d.appPort}${p}`).catch(() => null);
      return res ? `${res.status} ${await res.text()}` : null;
    };
    const site = repo.commit({ 'index.html': '<h1>static v1</h1>', 'about/index.html': 'about' }, 'static site');
    const d = track(await deployer(repo), repo);
    await push(d, repo, site);
    let s = await settled(d);
    assert.equal(s.current_release, `001-${site}`);
    assert.equal(await text(), '200 <h1>static v1</h1>');
    assert.equal(await text('/about/'), '200 about');
    assert.equal(await text('/client/route'), '200 <h1>static v1</h1>'); // single-page fallback
    assert.equal(await text('/missing.js'), '404 Not found\n');
    for (const p of ['/..%2f..%2fetc%2fpasswd', '/../../etc/passwd', '/%2e%2e/%2e%2e/etc/hostname']) assert.doesNotMatch((await text(p))!, /root:|^200 [^<]/, p);
    let meta = (await d.get('/logs/1')).text;
    assert.match(meta, /"project_type": "static",\n {2}"serve_type": "static"/);

    const py = repo.commit(
      {
        'index.html': null,
        'about/index.html': null,
        'requirements.txt': '',
        'app.py': [
          'import os, http.server',
          'class H(http.server.BaseHTTPRequestHandler):',
          '    def do_GET(self):',
          '        self.send_response(200); self.end_headers(); self.wfile.write(("python " + os.environ["GIT_COMMIT"]).encode())',
          'http.server.HTTPServer(("127.0.0.1", int(os.environ["PORT"])), H).serve_forever()',
          '',
        ].join('\n'),
      },
      'python app',
    );
    await push(d, repo, py);
    s = await settled(d);
    assert.equal(s.current_release, `002-${py}`, JSON.stringify(s.last_failed_deployment));
    assert.equal(await text(), `200 python ${py}`);
    meta = (await d.get('/logs/2')).text;
    assert.match(meta, /"project_type": "python",\n {2}"serve_type": "python"/);
    assert.match(meta, /python3 -m pip install .* --target \.pydeps -r requirements.txt/);

    const spa = repo.commit(
      {
        'requirements.txt': null,
        'app.py': null,
        'package.json': JSON.stringify({ name: 'spa', version: '1.0.0', scripts: { build: "node -e \"require('fs').mkdirSync('dist');require('fs').writeFileSync('dist/index.html','spa built')\"" } }),
      },
      'front-end',
    );
    await push(d, repo, spa);
    s = await settled(d);
    assert.equal(s.current_release, `003-${spa}`, JSON.stringify(s.last_failed_deployment));
    assert.equal(await text(), '200 spa built');
    assert.match((await d.get('/logs/3')).text, /"project_type": "node",\n {2}"serve_type": "static"/);
  });

  it('a restart during a deployment: the interrupted commit waits in the slot and deploys after the restart', async () => {
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    const a = repo.commit(nodeApp('a'));
    const root = tempDir();
    let d = await deployer(repo, {}, root);
    await push(d, repo, a);
    await settled(d);
    const slow = repo.commit(nodeApp('slow', { build: 'setTimeout(() => {}, 1500)' }));
    await push(d, repo, slow);
    await waitFor(async () => (await d.get('/status')).json.stage === 'building', 'the building stage');
    await d.close({ keepRoot: true });

    d = await deployer(repo, { APP_PORT: String(d.appPort) }, root);
    cleanup.push(() => d.close());
    const s = await settled(d);
    assert.equal(s.current_release, `002-${slow}`);
    assert.equal(s.failed_commits_count, undefined, 'a shutdown is not a failed commit');
    assert.equal((await appSays(d.appPort)).commit, slow);
    assert.match((await d.get(`/logs/${slow}-FAILED?format=json`)).json.content, /interrupted: the service is stopping/);
  });

  it('a killed service leaves the app serving; the restarted service adopts it, and stops a build the crash left', async () => {
    const repo = new Repo();
    cleanup.push(() => repo.remove());
    const a = repo.commit(nodeApp('a'));
    const port = await freePort();
    const env = testEnv(repo, await freePort(), tempDir(), { WEBHOOK_PORT: String(port), LOG_LEVEL: 'info' });
    const appPort = Number(env.APP_PORT);
    const cli = (): Promise<TestDeployer> =>
      waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok, 'the service').then(() => ({
        get: (p: string) => fetch(`http://127.0.0.1:${port}${p}`).then(async (r) => ({ status: r.status, json: await r.json() })),
        github: (event: string, payload: unknown) =>
          fetch(`http://127.0.0.1:${port}/webhook`, { method: 'POST', body: JSON.stringify(payload), headers: { 'content-type': 'application/json', 'x-github-event': event } }),
        env,
      }) as unknown as TestDeployer);

    let run = runCli(env);
    // On any outcome: a clean stop (which stops the app), and no app left on the port (a SIGKILLed service leaves it, by design).
    cleanup.push(async () => {
      if (run.child.exitCode === null) {
        run.child.kill('SIGTERM');
        await run.exited;
      }
      for (const pid of appPids(appPort)) await killGroup(procStat(pid)?.pgrp ?? pid, 2000);
    });
    let d = await cli();
    await d.github('push', githubPush(repo, a));
    await settled(d);
    const app = (await waitFor(() => findAppPid(appPort), 'the app'))!;
    // Probe the app all along: killing and restarting the service must not take it down.
    let probing = true;
    let failures = 0;
    const prober = (async () => {
      while (probing) {
        if ((await appSays(appPort))?.commit !== a) failures++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    run.child.kill('SIGKILL');
    await run.exited;
    run = runCli(env);
    d = await cli();
    await waitFor(async () => (await d.get('/health')).json.supervisor_status === 'RUNNING', 'the adopted app');
    probing = false;
    await prober;
    assert.equal(failures, 0, `the app answered all along; service said: ${run.output().match(/"msg":"[^"]*(adopt|stopping an app|app started|app died)[^"]*"/g)}`);
    assert.equal(findAppPid(appPort), app, 'the same process serves: adopted, not started twice');
    assert.equal(appPids(appPort).length, 1);

    // The adopted app dies: the supervisor starts it again.
    process.kill(app, 'SIGKILL');
    const again = (await waitFor(() => {
      const pid = findAppPid(appPort);
      return pid && pid !== app ? pid : null;
    }, 'a new app process'))!;
    await waitFor(async () => (await appSays(appPort))?.commit === a, 'the restarted app');

    // Killed while building: the build's process group dies on restart; the old app served throughout.
    const slow = repo.commit(nodeApp('slow', { build: 'setTimeout(() => {}, 600000)' }));
    await d.github('push', githubPush(repo, slow));
    // The build's innermost process (node -e), the one that outlives npm when the service dies.
    const build = (await waitFor(() => buildPids(env.DEPLOY_ROOT).find((p) => fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').startsWith('node\0-e')), 'the build process'))!;
    const buildStart = Number(procStat(build)!.start);
    run.child.kill('SIGKILL');
    await run.exited;
    assert.ok(buildPids(env.DEPLOY_ROOT).length > 0, 'the build outlived the killed service');
    assert.equal((await appSays(appPort))?.commit, a, 'the old release serves while the service is down');
    // Finish the slow commit quickly after the restart: the same commit is queued again once; make it fail fast.
    run = runCli(env);
    d = await cli();
    await waitFor(() => !buildPids(env.DEPLOY_ROOT).includes(build), 'the leftover build to be stopped');
    assert.equal(findAppPid(appPort), again, 'the app was adopted again, not restarted');
    const s = await waitFor(async () => {
      const st = (await d.get('/status')).json;
      return st.status === 'deploying' && st.commit_full === slow ? st : null;
    }, 'the interrupted commit to deploy again');
    assert.equal(s.failed_commits_count, undefined);
    assert.match((await d.get(`/logs/${slow}-FAILED?format=json`)).json.content, /interrupted: the service stopped during this deployment \(crash\)/);
    // A build process started after the old one (by start time: pids wrap at 32768 here, and a later pid was
    // seen below the old one in a suite run).
    await waitFor(() => buildPids(env.DEPLOY_ROOT).some((p) => Number(procStat(p)?.start ?? 0) > buildStart), 'the build to run again');
    run.child.kill('SIGTERM');
    await run.exited;
    const left = buildPids(env.DEPLOY_ROOT).map((p) => fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').replace(/\0/g, ' ') + ' ' + fs.readFileSync(`/proc/${p}/stat`, 'utf8'));
    assert.deepEqual(left, [], 'a stop kills the build group' + run.output().slice(-3000));
  });

  it('a restart keeps history and logs, restarts the current release; the supervisor restarts a dead app', async () => {
    const repo = new Repo();
    const a = repo.commit(nodeApp('a'));
    const root = tempDir();
    let d = await deployer(repo, {}, root);
    cleanup.push(() => repo.remove());
    await push(d, repo, a);
    await settled(d);
    const bad = repo.commit(nodeApp('bad', { build: 'process.exit(1)' }));
    await push(d, repo, bad);
    const before = await settled(d);
    await d.close({ keepRoot: true });
    assert.equal(await appSays(d.appPort), null, 'the app stops with the service');

    d = await deployer(repo, { APP_PORT: String(d.appPort) }, root);
    cleanup.push(() => d.close());
    const after = (await d.get('/status')).json;
    assert.deepEqual(after, before);
    assert.equal((await d.get(`/logs/1?format=json`)).status, 200);
    assert.equal((await d.get(`/logs/${bad}-FAILED?format=json`)).status, 200);
    const answer = await waitFor(() => appSays(d.appPort), 'the app after the restart');
    assert.equal(answer.commit, a);

    // Kill the app behind the supervisor's back: it is started again.
    const appPid = (await waitFor(() => findAppPid(d.appPort), 'the app process'))!;
    process.kill(appPid, 'SIGKILL');
    await waitFor(async () => (await appSays(d.appPort))?.commit === a && findAppPid(d.appPort) !== appPid, 'the restarted app');
    assert.equal((await d.get('/health')).json.supervisor_status, 'RUNNING');
  });
});
