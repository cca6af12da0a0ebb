/**
 * Deployment trigger, one run against the real service (`core/cli/deployer.ts` in its own process), a
 * temp git repository and the tiny node app of the tests:
 *   1. webhook acknowledgement latency (median, p99) for a burst of signed deliveries while idle: the
 *      baseline; then the same burst while a deployment runs (ignored pushes, and pushes that take the
 *      pending slot). Figures as ratios against the baseline.
 *   2. the app's downtime during a deployment: probed every 20 ms from the push until the service is idle;
 *      the longest stretch without an answer, against the whole deployment time. The spec's stage order
 *      stops the app before building, so the build time is downtime by design (BUILD_SECONDS simulates it).
 *
 *   npm run bench:deploy [-- --requests 300 --concurrency 20 --build 1.5]
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { sign } from '@octokit/webhooks-methods';
import { REPO_ROOT } from '../../core/config.ts';
import { Repo, freePort, githubPush, nodeApp, tempDir, testEnv } from '../../test/deployer/support.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const REQUESTS = arg('requests', 300);
const CONCURRENCY = arg('concurrency', 20);
const BUILD_SECONDS = arg('build', 1.5);
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
    HEALTH_CHECK_DELAY: '0.1',
    HEALTH_CHECK_RETRIES: '10',
    LOG_LEVEL: 'warn',
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
    const slow = { build: `setTimeout(() => {}, ${BUILD_SECONDS * 1000})` };
    const b = repo.commit(nodeApp('b', slow), 'b');
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
    await idle();
    const deployMs = performance.now() - t0;
    await wait(async () => (await fetch(`http://127.0.0.1:${appPort}/`).then((r) => r.json() as Promise<any>)).commit === c, 'the new app');
    await new Promise((r) => setTimeout(r, 100));
    probing = false;
    await prober;
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
    console.log(`\nApp downtime during one deployment (build ${BUILD_SECONDS} s, probe every 20 ms, ${probes} probes)`);
    console.log(`| deployment | downtime (sum) | longest outage | downtime / deployment | stopping_app | building | starting_app + health_check |`);
    console.log('|---|---|---|---|---|---|---|');
    console.log(
      `| ${deployMs.toFixed(0)} ms | ${down.toFixed(0)} ms | ${Math.max(0, ...outages).toFixed(0)} ms | ${(down / deployMs).toFixed(2)} | ${(stage('stopping_app') * 1000).toFixed(0)} ms | ${(stage('building') * 1000).toFixed(0)} ms | ${((stage('starting_app') + stage('health_check')) * 1000).toFixed(0)} ms |`,
    );
  } finally {
    service.kill('SIGTERM');
    await new Promise((r) => service.once('exit', r));
    repo.remove();
    fs.rmSync(root, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
