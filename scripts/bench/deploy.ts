/**
 * Deployment trigger, one run against the real service (`core/cli/deployer.ts` in its own process), a
 * temp git repository and the tiny node app of the tests:
 *   1. webhook acknowledgement latency (median, p99) for a burst of signed deliveries while idle: the
 *      baseline; then the same burst while a deployment runs (ignored pushes, and pushes that take the
 *      pending slot). Figures as ratios against the baseline.
 *   2. the app's downtime during one deployment whose build takes BUILD_SECONDS (20 by default): the app
 *      probed every 20 ms from the push until the new release answers. The baseline is the build time itself
 *      (the app was down for the whole build when the old release stopped first); the figure is
 *      downtime / build time.
 *   3. the service's RSS during 100 concurrent 24 MB unsigned uploads, on a fresh service with the default
 *      settings (VmHWM, the peak, against its idle RSS).
 *
 *   npm run bench:deploy [-- --requests 300 --concurrency 20 --build 20 --uploads 100]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { sign } from '@octokit/webhooks-methods';
import { REPO_ROOT } from '../../core/config.ts';
import { Repo, freePort, githubPush, memoryOf, nodeApp, runCli, tempDir, testEnv, waitFor } from '../../test/deployer/support.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const REQUESTS = arg('requests', 300);
const CONCURRENCY = arg('concurrency', 20);
const BUILD_SECONDS = arg('build', 20);
const UPLOADS = arg('uploads', 100);
const SECRET = 'bench-secret';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * (s.length - 1)))];
};
const ms = (x: number) => `${x.toFixed(2)} ms`;

async function main() {
  const repo = new Repo();
  const root = tempDir('deployer-bench-');
  const port = await freePort();
  const appPort = await freePort();
  const env = testEnv(repo, appPort, root, {
    WEBHOOK_PORT: String(port),
    DEBOUNCE_DELAY: '0',
    WEBHOOK_RATE_LIMIT: '0',
    WEBHOOK_SIGNATURE_VERIFY: 'true',
    WEBHOOK_SECRET: SECRET,
    HEALTH_CHECK_DELAY: '2',
    HEALTH_CHECK_RETRIES: '10',
    LOG_LEVEL: 'warn',
    DEPLOYMENT_TIMEOUT: String(Math.max(120, BUILD_SECONDS * 4)),
  });
  const service = spawn(process.execPath, ['--import', 'tsx', path.join(REPO_ROOT, 'core/cli/deployer.ts')], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  const get = (p: string) => fetch(base + p).then((r) => r.json() as Promise<any>);
  const wait = async (pred: () => Promise<boolean>, what: string) => {
    const end = Date.now() + 120_000;
    while (!(await pred().catch(() => false))) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const idle = () => wait(async () => {
    const s = await get('/status');
    return s.status === 'idle' && !s.queue.pending;
  }, 'an idle service');
  let n = 0;
  const deliver = async (payload: unknown) => {
    const body = JSON.stringify(payload);
    const t0 = performance.now();
    const res = await fetch(`${base}/webhook`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', 'x-github-event': 'push', 'x-github-delivery': `bench-${++n}`, 'x-hub-signature-256': await sign(SECRET, body) },
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`webhook answered ${res.status}`);
    return performance.now() - t0;
  };
  /** REQUESTS deliveries, CONCURRENCY in flight; latencies in ms. */
  const burst = async (payload: () => unknown) => {
    const lat: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next++ < REQUESTS) lat.push(await deliver(payload()));
      }),
    );
    return lat;
  };

  try {
    await wait(async () => (await fetch(`${base}/health`)).ok, 'the service');
    const a = repo.commit(nodeApp('a'), 'a');
    await deliver(githubPush(repo, a));
    await idle();

    // 1. Acknowledgement latency.
    const ignored = () => githubPush(repo, a, 'other-branch');
    await burst(ignored); // warm-up
    const baseline = await burst(ignored);
    // The latency bursts need a deployment that lasts through them: a short build is enough there.
    const b = repo.commit(nodeApp('b', { build: 'setTimeout(() => {}, 3000)' }), 'b');
    const slow = { build: `setTimeout(() => {}, ${BUILD_SECONDS * 1000})` };
    await deliver(githubPush(repo, b));
    await wait(async () => (await get('/status')).status === 'deploying', 'the deployment');
    const during = await burst(ignored);
    const queued = await burst(() => githubPush(repo, b));
    const stillDeploying = (await get('/status')).status === 'deploying';
    await idle();

    // 2. Downtime during one deployment.
    const c = repo.commit(nodeApp('c', slow), 'c');
    let probing = true;
    const outages: number[] = [];
    let downSince: number | null = null;
    let probes = 0;
    const prober = (async () => {
      while (probing) {
        const t = performance.now();
        const up = await fetch(`http://127.0.0.1:${appPort}/`, { signal: AbortSignal.timeout(1000) }).then((r) => r.ok, () => false);
        probes++;
        if (!up && downSince === null) downSince = t;
        if (up && downSince !== null) {
          outages.push(t - downSince);
          downSince = null;
        }
        await new Promise((r) => setTimeout(r, Math.max(0, 20 - (performance.now() - t))));
      }
    })();
    const t0 = performance.now();
    await deliver(githubPush(repo, c));
    await wait(async () => (await fetch(`http://127.0.0.1:${appPort}/`).then((r) => r.json() as Promise<any>)).commit === c, 'the new app');
    await idle();
    const deployMs = performance.now() - t0;
    probing = false;
    await prober;
    if (downSince !== null) outages.push(performance.now() - downSince);
    const down = outages.reduce((x, y) => x + y, 0);
    const log = fs.readFileSync(path.join(root, 'logs', fs.readdirSync(path.join(root, 'logs')).find((f) => f.endsWith(`-${c}.log`))!), 'utf8');
    const stage = (s: string) => Number(new RegExp(`stage ${s} finished in ([\\d.]+) s`).exec(log)?.[1] ?? NaN);

    const row = (name: string, lat: number[]) =>
      `| ${name} | ${ms(pct(lat, 0.5))} | ${ms(pct(lat, 0.99))} | ${(pct(lat, 0.5) / pct(baseline, 0.5)).toFixed(2)} | ${(pct(lat, 0.99) / pct(baseline, 0.99)).toFixed(2)} |`;
    console.log(`\nWebhook acknowledgement, ${REQUESTS} signed deliveries, ${CONCURRENCY} in flight (deployment still running at the end: ${stillDeploying})`);
    console.log('| burst | median | p99 | median / idle | p99 / idle |\n|---|---|---|---|---|');
    console.log(row('idle (baseline), ignored pushes', baseline));
    console.log(row('during a deployment, ignored pushes', during));
    console.log(row('during a deployment, queued pushes', queued));
    const buildMs = stage('building') * 1000;
    console.log(`\nApp downtime during one deployment (build ${BUILD_SECONDS} s, probe every 20 ms, ${probes} probes)`);
    console.log('| deployment | build (baseline: downtime when the app stopped first) | downtime (sum) | longest outage | downtime / build | stopping_app | starting_app + health_check |');
    console.log('|---|---|---|---|---|---|---|');
    console.log(
      `| ${deployMs.toFixed(0)} ms | ${buildMs.toFixed(0)} ms | ${down.toFixed(0)} ms | ${Math.max(0, ...outages).toFixed(0)} ms | ${(down / buildMs).toFixed(4)} | ${(stage('stopping_app') * 1000).toFixed(0)} ms | ${((stage('starting_app') + stage('health_check')) * 1000).toFixed(0)} ms |`,
    );
  } finally {
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    repo.remove();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

/** 3. A fresh service on its defaults (rate limit 10 a minute, 2 uploads read at once); UPLOADS concurrent 24 MB bodies. */
async function uploads() {
  const repo = new Repo();
  const root = tempDir('deployer-bench-');
  const port = await freePort();
  const run = runCli({ ...testEnv(repo, await freePort(), root, { WEBHOOK_PORT: String(port), GIT_BRANCH: 'prod', LOG_LEVEL: 'warn' }), WEBHOOK_RATE_LIMIT: '10', DEBOUNCE_DELAY: '5' });
  try {
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => null))?.ok, 'the service');
    const idle = memoryOf(run.child.pid!);
    const body = Buffer.alloc(24 * 1024 * 1024, 'x');
    const agent = new http.Agent({ keepAlive: false, maxSockets: UPLOADS });
    const t0 = performance.now();
    const statuses = await Promise.all(
      Array.from({ length: UPLOADS }, () =>
        new Promise<number>((resolve) => {
          const req = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/webhook', agent, headers: { 'content-type': 'application/json', 'content-length': String(body.length) } }, (res) => {
            res.resume();
            resolve(res.statusCode!);
          });
          req.on('error', () => resolve(0));
          req.end(body);
        }),
      ),
    );
    const ms = performance.now() - t0;
    const m = memoryOf(run.child.pid!);
    const counts: Record<string, number> = {};
    for (const s of statuses) counts[s === 0 ? 'cut' : s] = (counts[s === 0 ? 'cut' : s] ?? 0) + 1;
    console.log(`\nService RSS during ${UPLOADS} concurrent 24 MB unsigned uploads (default settings; ${ms.toFixed(0)} ms; answers ${JSON.stringify(counts)})`);
    console.log('| idle RSS | peak RSS (VmHWM) | peak / idle | goal |\n|---|---|---|---|');
    console.log(`| ${idle.now.toFixed(0)} MB | ${m.peak.toFixed(0)} MB | ${(m.peak / idle.now).toFixed(2)} | < 250 MB |`);
  } finally {
    run.child.kill('SIGTERM');
    await run.exited;
    repo.remove();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().then(uploads).then(() => process.exit(0)).catch((e) => {
  console.error(e);
  process.exit(1);
});
