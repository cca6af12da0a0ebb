/**
 * One name for the app a request acts on. Owner B names its own app where the level check looks and the
 * victim A's app where the handler looks (`?appname=<B's app>` with `{"appname": "<A's app>"}`): every
 * such request is refused (400) before the level check, on every route whose level depends on an app
 * (generated from the manifests the node serves), and A's files, backups and container are as they were.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { WebSocket } from 'ws';
import { REPO_ROOT } from '../../core/config.ts';
import { loadManifestDir, type RouteSpec } from '../../core/manifest/parse.ts';
import { namesApp, type NamePlace } from '../../core/http/app-name.ts';
import type { TestDocker } from '../support/docker.ts';
import type { Regtest } from '../support/litecoind.ts';
import type { Answer } from '../support/node.ts';
import { IDLE, component, last, ndjson, until, v8Spec } from '../apps/support.ts';
import { TENANT_PLUGINS, freeTenantPort, registerAndPay, said, paidWorld, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

const VICTIM = 'namevictim';
const ATTACKER = 'nameattacker';
/** The refusal of two different names, naming the field and the places. */
const conflict = (field: string, x: NamePlace, y: NamePlace) => new RegExp(`^${field} is given in the (${x}|${y}) and the (${x}|${y}) with different values`);

describe('tenants: one name for the app a request acts on', function () {
  this.timeout(600_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;
  let registryAddress: string;
  const mount = (app: string) => path.join(node.dataDir, 'apps', 'mounts', `coreweb_${app}`);
  const backupFile = (app: string) => path.join(mount(app), 'backup', 'local', 'backup_web.tar.gz');

  /** What A has that an attack could change: its files, its local backup, its container's start. */
  async function victimState() {
    const data = path.join(mount(VICTIM), 'appdata');
    const st = fs.statSync(backupFile(VICTIM));
    return {
      files: fs.readdirSync(data).sort(),
      secret: fs.readFileSync(path.join(data, 'secret.txt'), 'utf8'),
      backup: `${st.size} ${st.mtimeMs}`,
      startedAt: (await docker.inspect(`coreweb_${VICTIM}`)).State.StartedAt as string,
    };
  }

  /** Poll an operation to its end, as the caller that started it. */
  async function settle(started: Answer, headers: Record<string, string>) {
    const { jobId } = started.json.data;
    return until(`operation ${jobId}`, async () => {
      const d = (await node.get(`/apps/operations/${jobId}`, headers)).json?.data;
      return d && d.status !== 'Running' ? d : null;
    });
  }

  before(async () => {
    ({ docker, ltc, registryAddress } = await paidWorld());
    node = await startTenantNode({ docker, ltc, registryAddress, wallets: w });
    for (const [owner, name] of [['a', VICTIM], ['b', ATTACKER]] as const) {
      const spec = v8Spec(w[owner].legacyid, name, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]);
      await registerAndPay(node, ltc, registryAddress, owner, w, spec);
      const lines = ndjson(await node.get(`/apps/installapplocally/${name}`, node.headers.admin));
      assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    }
    // A's data, and a local backup A made of it (which a restore could roll A back to); then newer data.
    await docker.cli(['exec', `coreweb_${VICTIM}`, 'sh', '-c', 'echo v1-of-a > /data/secret.txt && mkdir -p /data/docs']);
    const backup = await node.post('/apps/appendbackuptask', { appname: VICTIM, backup: [{ component: 'web', backup: true }] }, node.headers.a);
    assert.equal(backup.status, 202, said(backup));
    assert.equal((await settle(backup, node.headers.a)).status, 'Succeeded');
    await until('A running again after its backup', async () => (await docker.inspect(`coreweb_${VICTIM}`)).State.Running === true);
    await docker.cli(['exec', `coreweb_${VICTIM}`, 'sh', '-c', 'echo v2-of-a > /data/secret.txt']);
    await docker.cli(['exec', `coreweb_${ATTACKER}`, 'sh', '-c', 'echo b > /data/b.txt']);
  });
  after(async () => {
    await node?.stop();
    await ltc?.stop();
  });

  it("refuses B's move, copy, compress, backup and restore of A's app named in the body beside B's in the query", async () => {
    const before = await victimState();
    assert.equal(before.secret, 'v2-of-a\n');
    const attacks: [string, Record<string, unknown>][] = [
      ['/apps/moveobject', { component: 'web', source: 'appdata/docs', target: 'appdata/moved' }],
      ['/apps/copyobject', { component: 'web', source: 'appdata/secret.txt', target: 'appdata/copied.txt' }],
      ['/apps/compressobject', { component: 'web', folder: 'appdata', entries: ['secret.txt'], target: 'appdata/loot.tar.gz' }],
      // A's older backup over A's data (rolled back to v1), then B's archive at B's address (an address the
      // node refuses later, but the operation must never start).
      ['/apps/appendrestoretask', { type: 'local', restore: [{ component: 'web', restore: true }] }],
      ['/apps/appendrestoretask', { type: 'remote', restore: [{ component: 'web', restore: true, url: 'https://attacker.example/backup_web.tar.gz' }] }],
      ['/apps/appendbackuptask', { backup: [{ component: 'web', backup: true }] }],
    ];
    const answers: string[] = [];
    for (const [route, body] of attacks) {
      const a = await node.post(`${route}?appname=${ATTACKER}`, { appname: VICTIM, ...body }, node.headers.b);
      // An operation the node took is run to its end first, so what it did to A shows below.
      if (a.status === 202) await settle(a, node.headers.b);
      answers.push(`${route} ${a.status} ${a.json?.data?.code} ${a.json?.data?.message}`);
    }
    // And the other way round: A's name in the query, B's in the body.
    const swapped = await node.post(`/apps/moveobject?appname=${VICTIM}`, { appname: ATTACKER, component: 'web', source: 'appdata/b.txt', target: 'appdata/b-moved.txt' }, node.headers.b);
    if (swapped.status === 202) await settle(swapped, node.headers.b);
    answers.push(`/apps/moveobject (swapped) ${swapped.status} ${swapped.json?.data?.code} ${swapped.json?.data?.message}`);

    const after = await victimState();
    assert.deepEqual(after, before, "A's files, backup and container start are as they were");
    assert.deepEqual(fs.readdirSync(path.join(mount(ATTACKER), 'appdata')).sort(), ['b.txt'], "nothing of A's reached B's volume");
    for (const a of answers) assert.match(a, /^\S+( \(swapped\))? 200 400 appname is given in the query and the body with different values/, a);
  });

  it('still serves an app named the same in two places (B moving its own file)', async () => {
    const a = await node.post(`/apps/moveobject?appname=${ATTACKER}`, { appname: ATTACKER, component: 'web', source: 'appdata/b.txt', target: 'appdata/b2.txt' }, node.headers.b);
    assert.equal(a.status, 202, said(a));
    const done = await settle(a, node.headers.b);
    assert.equal(done.status, 'Succeeded', JSON.stringify(done));
    assert.deepEqual(fs.readdirSync(path.join(mount(ATTACKER), 'appdata')).sort(), ['b2.txt']);
  });

  it('refuses two different app names on every route whose level depends on an app (from the manifests), A untouched', async () => {
    const before = await victimState();
    const manifests = loadManifestDir(path.join(REPO_ROOT, 'manifests')).filter((m) => ['host', 'node', ...TENANT_PLUGINS].includes(m.plugin));
    const routes = manifests.flatMap((m) => m.routes).filter((r) => namesApp(r.level) && !r.removed);
    assert.ok(routes.length >= 30, `app-level routes found: ${routes.length}`);
    const problems: string[] = [];
    let sent = 0;
    for (const r of routes) {
      const places = placesOf(r);
      for (const [x, y] of pairs(places)) {
        for (const [nx, ny] of [[ATTACKER, VICTIM], [VICTIM, ATTACKER]]) {
          const req = requestFor(r, { [x]: nx, [y]: ny });
          const what = `${r.id} ${x}=${nx} ${y}=${ny}`;
          sent++;
          if (r.method === 'WS') {
            const status = await upgradeStatus(node.port, req.url, node.headers.b);
            if (status !== 400) problems.push(`${what}: upgrade answered ${status}`);
            continue;
          }
          const a = req.body ? await node.post(req.url, req.body, node.headers.b) : await node.request(r.method === 'SSE' ? 'GET' : r.method, req.url, { headers: node.headers.b });
          const e = a.json?.data;
          // The query refusal is answered with its wire status (400), the conflict in the envelope (200).
          const [refusal, wire] = r.query === false ? [/takes no query parameters/, 400] : [conflict(r.appParam, x, y), 200];
          if (a.status !== wire || a.json?.status !== 'error' || e?.code !== 400 || !refusal.test(String(e?.message))) problems.push(`${what}: ${said(a)}`);
        }
      }
    }
    assert.ok(sent >= 60, `requests sent: ${sent}`);
    assert.deepEqual(problems, []);
    assert.deepEqual(await victimState(), before, "A's files, backup and container start are as they were");
    assert.doesNotMatch(node.output(), /handler failed|"level":50/);
  });
});

/** Where a route can carry its app name: its path (when it has the parameter), the query, a JSON body. */
function placesOf(r: RouteSpec): NamePlace[] {
  const out: NamePlace[] = [];
  if (new RegExp(`/:${r.appParam}\\??(/|$)`).test(r.path)) out.push('path');
  // Also on routes that take no query string: they refuse it (400) whatever it names.
  out.push('query');
  if (r.method === 'POST' && ['json', 'raw-json'].includes(r.body.parser)) out.push('body');
  return out;
}

function pairs<T>(xs: T[]): [T, T][] {
  return xs.flatMap((x, i) => xs.slice(i + 1).map((y) => [x, y] as [T, T]));
}

/**
 * The request naming the app as `names` says. Path parameters before the app's are filled (`web` for a
 * component, else `x`), later optional ones left out: the refusal comes before any of them is read.
 */
function requestFor(r: RouteSpec, names: Partial<Record<NamePlace, string>>): { url: string; body?: Record<string, string> } {
  let p = r.path;
  if (names.path) {
    const at = p.indexOf(`/:${r.appParam}`);
    const head = p.slice(0, at).replace(/\/:([A-Za-z_]+)\??/g, (_m, n: string) => `/${n === 'component' ? 'web' : 'x'}`);
    const tail = p.slice(at).replace(new RegExp(`^/:${r.appParam}\\??`), `/${names.path}`).replace(/\/:[A-Za-z_]+\?/g, '').replace(/\/:([A-Za-z_]+)/g, (_m, n: string) => `/${n === 'component' ? 'web' : 'x'}`);
    p = head + tail;
  } else p = p.replace(/\/:[A-Za-z_]+\?/g, '').replace(/\/:([A-Za-z_]+)/g, (_m, n: string) => `/${n === 'component' ? 'web' : 'x'}`);
  if (names.query) p += `?${r.appParam}=${names.query}`;
  const body = r.method === 'POST' ? (names.body ? { [r.appParam]: names.body } : {}) : undefined;
  return { url: p, body };
}

/** The HTTP status a websocket upgrade is answered with (101 when it is accepted). */
function upgradeStatus(port: number, url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}${url}`, { headers });
    ws.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.once('open', () => {
      resolve(101);
      ws.close();
    });
    ws.once('error', (e) => reject(e));
  });
}
