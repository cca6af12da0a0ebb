/**
 * Deployer test support: real git repositories in temp folders holding a tiny node app that serves its
 * commit id, the real deployer host configured from env, and GitHub payloads from @octokit/webhooks-examples
 * re-pointed at the temp repository.
 */
import { eventually } from '../support/wait.ts';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { sign } from '@octokit/webhooks-methods';
import { REPO_ROOT } from '../../core/config.ts';
import { createDeployerHost, deployerConfigFromEnv } from '../support/deployer.ts';
import type { Host } from '../../core/host.ts';
import type { Answer } from '../support/node.ts';
import { rawRequest } from '../support/raw-http.ts';
import { entryArgs } from '../support/entry.ts';
import { freePortIn } from '../support/ports.ts';

const require = createRequire(import.meta.url);

/** Temp folders of this process, removed when it exits (tests that fail early leave none behind). */
const temps: string[] = [];
process.once('exit', () => {
  for (const d of temps) fs.rmSync(d, { recursive: true, force: true });
});

export function tempDir(prefix = 'deployer-test-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  temps.push(d);
  return d;
}

/** The deployer area's ports: 22000-22999. */
export const freePort = () => freePortIn(22000, 22999);

const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 'test@example.com', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 'test@example.com' };

/** A git repository (branch main) the deployer fetches from. */
export class Repo {
  readonly dir = tempDir('deployer-repo-');

  constructor() {
    this.git('init', '-q', '-b', 'main');
  }

  git(...args: string[]): string {
    return execFileSync('git', args, { cwd: this.dir, env: GIT_ENV, encoding: 'utf8' }).trim();
  }

  /** Write files (null deletes) and commit them; returns the commit id. */
  commit(files: Record<string, string | null>, message = 'change'): string {
    for (const [f, content] of Object.entries(files)) {
      const p = path.join(this.dir, f);
      if (content === null) fs.rmSync(p, { force: true, recursive: true });
      else {
        fs.mkdirSync(path.dirname(p), { recursive: true });
        fs.writeFileSync(p, content);
      }
    }
    // One child process for the three git commands: a spawn from this (large) mocha process costs it 4-14 ms
    // of CPU, more the larger it is (fork), and the deployer tests commit hundreds of times (profile of
    // deploy.test.ts: 4.2 s of its 24 s in these spawns); the shell's own forks are cheap.
    return execFileSync('sh', ['-c', 'git add -A && git commit -q --allow-empty -m "$1" && git rev-parse HEAD', 'commit', message], { cwd: this.dir, env: GIT_ENV, encoding: 'utf8' }).trim();
  }

  remove() {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

const SERVER = `const http = require('http');
const fs = require('fs');
const version = fs.readFileSync(__dirname + '/version.txt', 'utf8').trim();
http.createServer((req, res) => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ commit: process.env.GIT_COMMIT, version, release: process.env.DEPLOY_RELEASE, built: fs.existsSync(__dirname + '/built.txt') }));
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

const LOCK = (deps = '') =>
  JSON.stringify({ name: 'app', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'app', version: '1.0.0' } }, deps }, null, 2);

/** Files of the node test app. `build` is a node -e snippet run by `npm run build`; `serve: false` never listens. */
export function nodeApp(version: string, o: { build?: string; serve?: boolean; lock?: string } = {}): Record<string, string> {
  const scripts: Record<string, string> = { start: 'node server.js' };
  if (o.build) scripts.build = `node -e "${o.build}"`;
  return {
    'package.json': JSON.stringify({ name: 'app', version: '1.0.0', private: true, scripts }, null, 2),
    'package-lock.json': LOCK(o.lock),
    'server.js': o.serve === false ? 'setInterval(() => {}, 1000); // never listens\n' : SERVER,
    'version.txt': version,
  };
}

export type { Answer };

/**
 * A deployer running in this process. Each of its requests goes on a connection of its own, as git hosts
 * deliver webhooks and curl calls /status. Through fetch's pool, a test that blocked its event loop past the
 * service's 5 s keep-alive (12 git commits at load 9) sent its next delivery on an idle connection whose
 * keep-alive timer then fired first: closed with the request unread, ECONNRESET (1 run in 3 of
 * security.test.ts at load 8-9, traced with the connection guard's close events).
 */
export interface TestDeployer {
  host: Host;
  url: string;
  root: string;
  appPort: number;
  env: Record<string, string>;
  get(p: string, headers?: Record<string, string>): Promise<Answer>;
  post(p: string, body: string | Buffer, headers?: Record<string, string>): Promise<Answer>;
  /** POST a JSON payload as GitHub would (event header, delivery id, signature when a secret is given). */
  github(event: string, payload: unknown, o?: { secret?: string; delivery?: string; path?: string }): Promise<Answer>;
  close(o?: { keepRoot?: boolean }): Promise<void>;
}

/** Env for a fast test deployer: sub-second debounce and health delays. */
export function testEnv(repo: Repo, appPort: number, root: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    GIT_REPO_URL: repo.dir,
    GIT_BRANCH: 'main',
    APP_PORT: String(appPort),
    DEPLOY_ROOT: root,
    WEBHOOK_PORT: '0',
    WEBHOOK_HOST: '127.0.0.1',
    DEBOUNCE_DELAY: '0.2',
    HEALTH_CHECK_RETRIES: '10',
    HEALTH_CHECK_DELAY: '0.3',
    DEPLOYMENT_TIMEOUT: '60',
    WEBHOOK_RATE_LIMIT: '1000',
    LOG_LEVEL: process.env.TEST_LOG ?? 'silent',
    ...extra,
  };
}

/** `listenPort`: 0 takes the kernel's choice; a test that must bind in a range of its own passes one. */
export async function startDeployer(env: Record<string, string>, listenPort = 0): Promise<TestDeployer> {
  const config = deployerConfigFromEnv(env);
  const host = createDeployerHost({ config });
  await host.start();
  const port = await host.listen(listenPort, '127.0.0.1');
  const url = `http://127.0.0.1:${port}`;
  const post = (p: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    rawRequest(url, p, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  let n = 0;
  return {
    host,
    url,
    root: env.DEPLOY_ROOT,
    appPort: Number(env.APP_PORT),
    env,
    get: (p, headers) => rawRequest(url, p, { headers }),
    post,
    async github(event, payload, o = {}) {
      const body = JSON.stringify(payload);
      const headers: Record<string, string> = { 'x-github-event': event, 'x-github-delivery': o.delivery ?? `test-${process.pid}-${Date.now()}-${++n}` };
      if (o.secret) headers['x-hub-signature-256'] = await sign(o.secret, body);
      return post(o.path ?? '/webhook', body, headers);
    },
    async close(o = {}) {
      await host.close();
      if (!o.keepRoot) fs.rmSync(env.DEPLOY_ROOT, { recursive: true, force: true });
    },
  };
}

const examples: Array<{ name: string; examples: any[] }> = require('@octokit/webhooks-examples');

/** A real GitHub example payload (deep copy) of an event, picked by a predicate. */
export function githubExample(name: string, pick: (e: any) => boolean = () => true): any {
  const e = examples.find((x) => x.name === name)?.examples.find(pick);
  if (!e) throw new Error(`no @octokit/webhooks-examples payload for ${name}`);
  return structuredClone(e);
}

/** GitHub's push example re-pointed at a temp repository, branch and commit. */
export function githubPush(repo: Repo, commit: string, branch = 'main'): any {
  const p = githubExample('push', (e) => e.ref === 'refs/heads/master' && e.head_commit);
  p.ref = `refs/heads/${branch}`;
  p.after = commit;
  p.head_commit.id = commit;
  p.head_commit.message = `commit ${commit.slice(0, 7)}`;
  p.repository.clone_url = repo.dir;
  p.repository.default_branch = 'main';
  return p;
}

export function fixture(name: string): any {
  return JSON.parse(fs.readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8'));
}

/** Poll until `fn` returns a truthy value, for at most `limitMs` (test/support/wait.ts). */
export const waitFor = <T>(fn: () => Promise<T> | T, what: string, limitMs = 60_000) => eventually(fn, { what, timeoutMs: limitMs, everyMs: 50 });

/** Wait until no deployment runs, waits in the slot or is being debounced; returns the idle status. */
export async function settled(d: TestDeployer): Promise<any> {
  return waitFor(async () => {
    const s = await d.get('/status', d.env.API_KEY ? { authorization: `Bearer ${d.env.API_KEY}` } : {});
    return s.json?.status === 'idle' && !s.json.queue.pending && !s.json.queue.debouncing ? s.json : null;
  }, 'the deployer to settle');
}

/** GET a JSON answer (any status). */
export async function fetchJson(url: string, headers: Record<string, string> = {}): Promise<any> {
  return (await fetch(url, { headers })).json();
}

/** What the deployed app answers (null when it does not answer). */
export async function appSays(port: number): Promise<any> {
  const a = await appAnswer(port);
  return a === 'slow' ? null : a;
}

/**
 * What the deployed app answers: null when it is down (refused, reset, not JSON), 'slow' when it did not
 * answer within 2 s, which on a loaded machine says nothing either way (a probe of an app that never stopped
 * timed out at load 11).
 */
export async function appAnswer(port: number): Promise<any> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2000) });
    return await res.json();
  } catch (e) {
    return (e as Error).name === 'TimeoutError' ? 'slow' : null;
  }
}

/** Run the real entry point (`npm run deployer` runs `dist/core/cli/deployer.js`) as its own process, from any cwd. */
export function runCli(env: Record<string, string>, cwd = REPO_ROOT) {
  const child = spawn(process.execPath, entryArgs('deployer'), {
    cwd,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b) => (out += b));
  child.stderr.on('data', (b) => (out += b));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return { child, exited, output: () => out };
}

/** Peak and current RSS (VmHWM, VmRSS) of a process, in MB. */
export function memoryOf(pid: number): { peak: number; now: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
  return { peak: kb('VmHWM') / 1024, now: kb('VmRSS') / 1024 };
}

/** Live (not zombie) processes whose env and command line match. */
function processes(match: (env: string[], cmd: string) => boolean): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') continue;
      const env = fs.readFileSync(`/proc/${e}/environ`, 'utf8').split('\0');
      const cmd = fs.readFileSync(`/proc/${e}/cmdline`, 'utf8');
      if (match(env, cmd)) out.push(Number(e));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** The node processes serving the test app on `port` (found by the PORT in their environment). */
export function appPids(port: number): number[] {
  return processes((env, cmd) => env.includes(`PORT=${port}`) && cmd.includes('server.js') && cmd.startsWith('node'));
}

/** The pid of the node process serving the test app on `port`. */
export function findAppPid(port: number): number | null {
  return appPids(port)[0] ?? null;
}

/** Install / build / hook processes of the deployer whose DEPLOY_ROOT is `root`. */
export function buildPids(root: string): number[] {
  return processes((env) => env.includes(`DEPLOYER_BUILD=${root}`));
}
