/**
 * `npm run bench:auth`: one run, figures as ratios against baselines measured in the same run.
 *
 * 1. Authenticated requests: the same handler served at level user (with a `legacyidauth` header) and at
 *    level public (no header), 1 s slices taken in turn. Goal: user / public >= 0.8 (the reference's
 *    per-request ECDSA recovery gives about 0.26).
 * 2. Logins: POST /id/verifylogin of freshly issued, pre-signed phrases at full speed, against a bare loop
 *    of the verify call over the same signatures in the same server process. Goal: >= 0.8. Run twice: with
 *    the native libsecp256k1 binding the node uses, and with the pure-JS fallback swapped in (bench only),
 *    the case npm's install-script policy would leave.
 *
 * The node runs in a child process (this file with `--server`) with its store on disk, as in production;
 * autocannon runs here.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// autocannon ships no type declarations; Result below is the part this script reads.
// @ts-ignore
import autocannonUntyped from 'autocannon';
import YAML from 'yaml';

interface Result {
  requests: { total: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
  duration: number;
}
const autocannon = autocannonUntyped as (opts: Record<string, unknown>) => Promise<Result>;

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const LOGINS = Number(process.env.BENCH_LOGINS ?? 3000);
const CONNECTIONS = 50;
const SELF = fileURLToPath(import.meta.url);

interface Pair {
  legacyid: string;
  loginPhrase: string;
  signature: string;
}

/** The server: core, host and identity manifests, identity with two bench routes on one handler. */
async function serve(pureJs: boolean): Promise<void> {
  if (pureJs) {
    // Bench only: every `require('secp256k1')` (bitcoinjs-message's and the plugin's) gets the pure-JS build.
    const req = createRequire(path.join(path.dirname(SELF), '../../plugins/identity/verify.ts'));
    const id = req.resolve('secp256k1');
    req(id);
    req.cache[id]!.exports = req('secp256k1/elliptic');
  }
  const { REPO_ROOT, resolveConfig } = await import('../../core/config.ts');
  const { Host } = await import('../../core/host.ts');
  const { verifierBackend, verifySignature } = await import('../../plugins/identity/verify.ts');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'corenode-bench-auth-'));
  const manifests = path.join(dir, 'manifests');
  fs.mkdirSync(manifests);
  for (const f of ['node.yaml', 'host.yaml']) fs.copyFileSync(path.join(REPO_ROOT, 'manifests', f), path.join(manifests, f));
  const identity = YAML.parse(fs.readFileSync(path.join(REPO_ROOT, 'manifests', 'identity.yaml'), 'utf8'));
  identity.routes.push(
    { id: 'identity.bench-user', path: '/bench/user', handler: 'checkprivilege', level: 'user' },
    { id: 'identity.bench-public', path: '/bench/public', handler: 'checkprivilege', level: 'public' },
  );
  fs.writeFileSync(path.join(manifests, 'identity.yaml'), YAML.stringify(identity));
  // One client address and one wallet log in thousands of times: lift the per-address and per-id bounds,
  // which would otherwise refuse phrases and evict sessions in the middle of the measurement.
  const identityConfig = { phrasesPerAddress: 1_000_000, maxSessionsPerId: 1_000_000, maxSessions: 1_000_000 };
  const config = resolveConfig({ dataDir: path.join(dir, 'data'), manifestsDir: manifests, log: { level: 'silent' }, watch: false, identity: identityConfig }, 'bench');
  const host = new Host({ config });
  await host.start();
  const port = await host.listen(0, '127.0.0.1');
  process.on('message', (m: { loop?: Pair[]; cpu?: boolean }) => {
    if (m.cpu) {
      const u = process.cpuUsage();
      return void process.send!({ cpuMicros: u.user + u.system });
    }
    if (!m.loop) return;
    const pairs = m.loop;
    for (const p of pairs.slice(0, 100)) verifySignature(p.loginPhrase, p.legacyid, p.signature);
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    let ok = 0;
    for (const p of pairs) if (verifySignature(p.loginPhrase, p.legacyid, p.signature)) ok++;
    const c = process.cpuUsage(c0);
    process.send!({ rate: pairs.length / ((performance.now() - t0) / 1000), cpuPer: (c.user + c.system) / pairs.length, ok });
  });
  process.send!({ port, backend: verifierBackend });
  process.on('disconnect', () => void host.close().then(() => fs.rmSync(dir, { recursive: true, force: true })));
}

function next<T>(child: ChildProcess, key: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: any) => {
      if (m && key in m) {
        child.off('message', onMessage);
        resolve(m as T);
      }
    };
    child.on('message', onMessage);
    child.once('exit', (code) => reject(new Error(`bench server exited (${code})`)));
  });
}

async function spawnServer(pureJs: boolean): Promise<{ child: ChildProcess; base: string; backend: string }> {
  const child = fork(SELF, ['--server', ...(pureJs ? ['--pure-js'] : [])], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const { port, backend } = await next<{ port: number; backend: string }>(child, 'port');
  return { child, base: `http://127.0.0.1:${port}`, backend };
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.disconnect();
    setTimeout(() => child.kill(), 3000).unref();
  });
}

async function json(url: string, init?: RequestInit): Promise<any> {
  const res = await (await fetch(url, init)).json();
  if (res.status !== 'success') throw new Error(`${url}: ${JSON.stringify(res)}`);
  return res.data;
}

/** Run `fn` over `items` with `n` in flight. */
async function pool<T, R>(items: T[], n: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let i = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (i < items.length) {
        const k = i++;
        out[k] = await fn(items[k]);
      }
    }),
  );
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Imported when used: the server process must load bitcoinjs-message only after its secp256k1 choice.
const freshWallet = async () => (await import('../../test/support/wallets.ts')).bitcoinWallet(true);

async function authenticated(base: string): Promise<string[]> {
  const wallet = await freshWallet();
  const phrase: string = await json(`${base}/id/loginphrase`);
  const signature = wallet.sign(phrase) as string;
  await json(`${base}/id/verifylogin`, { method: 'POST', body: JSON.stringify({ legacyid: wallet.legacyid, loginPhrase: phrase, signature }) });
  const header = new URLSearchParams({ legacyid: wallet.legacyid, signature, loginPhrase: phrase }).toString();
  const user = { url: `${base}/bench/user`, headers: { legacyidauth: header } as Record<string, string> };
  const pub = { url: `${base}/bench/public`, headers: {} as Record<string, string> };
  if ((await json(user.url, { headers: user.headers })).privilege !== 'user') throw new Error('the bench header does not authenticate');
  const blank = () => ({ n: 0, s: 0, bad: 0, p99: [] as number[] });
  const tally = { user: blank(), pub: blank() };
  const slice = async (t: ReturnType<typeof blank>, target: typeof user, seconds: number) => {
    const r = await autocannon({ ...target, connections: CONNECTIONS, duration: seconds });
    t.n += r.requests.total;
    t.s += r.duration;
    t.bad += r.non2xx + r.errors;
    t.p99.push(r.latency.p99);
  };
  await slice(blank(), user, 1); // warm-up
  await slice(blank(), pub, 1);
  for (let i = 0; i < SECONDS; i++) {
    await slice(tally.user, user, 1);
    await slice(tally.pub, pub, 1);
  }
  const rUser = tally.user.n / tally.user.s;
  const rPub = tally.pub.n / tally.pub.s;
  return [
    `  1. same handler, ${CONNECTIONS} connections, ${SECONDS} s each in 1 s slices taken in turn`,
    `     public, no header            : ${rPub.toFixed(0)} req/s (median p99 ${median(tally.pub.p99)} ms, ${tally.pub.bad} bad)`,
    `     user, legacyidauth session   : ${rUser.toFixed(0)} req/s (median p99 ${median(tally.user.p99)} ms, ${tally.user.bad} bad)`,
    `     ratio user / public          : ${(rUser / rPub).toFixed(3)} (goal >= 0.8)`,
  ];
}

async function logins(server: { child: ChildProcess; base: string; backend: string }, count: number): Promise<string[]> {
  const { base } = server;
  const wallet = await freshWallet();
  const phrases: string[] = await pool(Array.from({ length: count + 100 }), 16, () => json(`${base}/id/loginphrase`));
  const pairs: Pair[] = phrases.map((p) => ({ legacyid: wallet.legacyid, loginPhrase: p, signature: wallet.sign(p) as string }));
  const warm = pairs.splice(0, 100);
  await pool(warm, 16, (p) => json(`${base}/id/verifylogin`, { method: 'POST', body: JSON.stringify(p) }));
  const bodies = pairs.map((p) => JSON.stringify(p));
  let i = 0;
  let succeeded = 0;
  const cpu = async () => (server.child.send({ cpu: true }), (await next<{ cpuMicros: number }>(server.child, 'cpuMicros')).cpuMicros);
  const c0 = await cpu();
  const t0 = performance.now();
  let last = t0;
  const r = await autocannon({
    url: `${base}/id/verifylogin`,
    connections: CONNECTIONS,
    amount: bodies.length,
    requests: [
      {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        setupRequest: (req: object) => ({ ...req, body: bodies[i++] }),
        onResponse: (_status: number, body: string) => {
          last = performance.now();
          if (body.startsWith('{"status":"success"')) succeeded++;
        },
      },
    ],
  });
  const wall = (last - t0) / 1000; // to the last answer: autocannon ends its run on a whole-second tick
  const loginCpu = ((await cpu()) - c0) / bodies.length;
  if (succeeded !== bodies.length) throw new Error(`only ${succeeded} of ${bodies.length} logins succeeded`);
  const rLogin = bodies.length / wall; // autocannon's duration is in whole seconds
  server.child.send({ loop: pairs });
  const loop = await next<{ rate: number; cpuPer: number; ok: number }>(server.child, 'rate');
  if (loop.ok !== pairs.length) throw new Error('a bench signature did not verify');
  return [
    `  2. logins, ${server.backend} verifier: ${bodies.length} POST /id/verifylogin of fresh phrases, ${CONNECTIONS} connections`,
    `     logins                       : ${rLogin.toFixed(0)} /s (all succeeded, p99 ${r.latency.p99} ms), server CPU ${loginCpu.toFixed(0)} us per login`,
    `     bare verify loop (same proc.): ${loop.rate.toFixed(0)} /s, CPU ${loop.cpuPer.toFixed(0)} us per verify`,
    `     ratio logins / verify        : ${(rLogin / loop.rate).toFixed(3)} by rate (goal >= 0.8); ${(loop.cpuPer / loginCpu).toFixed(3)} by CPU per login`,
  ];
}

async function main(): Promise<void> {
  const native = await spawnServer(false);
  const lines = [`auth benchmark, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)} at start`];
  lines.push(...(await authenticated(native.base)));
  lines.push(...(await logins(native, LOGINS)));
  await stop(native.child);
  const js = await spawnServer(true);
  lines.push(...(await logins(js, Math.max(300, Math.round(LOGINS / 5)))));
  await stop(js.child);
  console.log(lines.join('\n'));
}

if (process.argv.includes('--server')) await serve(process.argv.includes('--pure-js'));
else await main();
