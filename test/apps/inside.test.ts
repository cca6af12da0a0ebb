/**
 * Looking inside running apps (issue 14) against the real test Docker: a container that logs to stdout
 * and stderr and changes files, and a node server component; applog, applogpolling, appinspect,
 * appstats, apptop, appchanges, appmonitor (history kept across a node restart), appexec and the
 * websocket terminal; every route's level matrix (owner, core team, admin, another user, anonymous) and
 * bad input; lookups never reach another app's container.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import WebSocket from 'ws';
import { ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { component, data, error, freeAppPort2, last, makeWallets, ndjson, registerPaid, startAppsNode, until, v8Spec, type AppsNode } from './support.ts';

const APP = 'inside';
const OTHER = 'insideother';
const LOGGER = `corelog_${APP}`;
const LOG_CMD = 'echo out-first; echo err-first >&2; touch /tmp/changed-file; mkdir -p /data/made; i=0; while true; i=$((i+1)); do echo tick $i; sleep 0.2; done';

describe('apps: looking inside running apps', function () {
  this.timeout(300_000);
  let docker: TestDocker;
  let ltc: Regtest;
  let node: AppsNode;
  let registryAddress: string;
  const dataDir = fs.mkdtempSync('/tmp/apps2-inside-');
  const w = makeWallets();
  const appsCfg = { monitor: { intervalMs: 300 }, guard: { intervalMs: 300 } };

  before(async () => {
    [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
    await ltc.mine(101);
    registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
    node = await startAppsNode({ docker, ltc, wallets: w, registryAddress, dataDir, apps: appsCfg });
    const busy = { commands: ['/bin/sh', '-c', LOG_CMD], cpu: 0.2, ram: 100 };
    const spec = v8Spec(w.owner.legacyid, APP, [component('log', docker.images.busybox, await freeAppPort2(), 7000, busy), component('web', docker.images.node, await freeAppPort2(), 8080)]);
    const other = v8Spec(w.other.legacyid, OTHER, [component('log', docker.images.busybox, await freeAppPort2(), 7000, { commands: ['/bin/sh', '-c', 'echo secret-of-other; sleep 100000'], cpu: 0.1, ram: 100 })]);
    await registerPaid(node, ltc, registryAddress, w.owner, [spec]);
    await registerPaid(node, ltc, registryAddress, w.other, [other]);
    for (const a of [APP, OTHER]) {
      const lines = ndjson(await node.get(`/apps/installapplocally/${a}`, node.headers.coreTeam));
      assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    }
  });
  after(async () => {
    if (node) {
      for (const a of [APP, OTHER]) await node.get(`/apps/appremove/${a}/true`, node.headers.coreTeam).catch(() => {});
      await node.close();
    }
    await ltc?.stop();
    await unmountUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** Owner and core team pass; the node's admin, another user and anonymous get body code 401. */
  const matrix = async (path: string, ok: (a: any) => void, passes: ('owner' | 'coreTeam')[] = ['owner', 'coreTeam']) => {
    for (const who of ['owner', 'coreTeam', 'admin', 'other'] as const) {
      const a = await node.get(path, node.headers[who]);
      if ((passes as string[]).includes(who)) ok(a);
      else assert.equal(error(a).code, 401, `${who} on ${path}`);
    }
    assert.equal(error(await node.get(path)).code, 401, `anonymous on ${path}`);
  };

  it('applog: stdout and stderr demultiplexed into one text, `lines` a number or all; levels; bad input', async () => {
    await until('logged ticks', async () => /tick 3/.test(data(await node.get(`/apps/applog/log_${APP}`, node.headers.owner))));
    await matrix(`/apps/applog/log_${APP}/all`, (a) => {
      const text: string = data(a);
      // Both streams in one text. Docker keeps the order within a stream, none between the two pipes.
      const lines = text.split('\n');
      assert.ok(lines.includes('err-first') && lines.includes('out-first'), text.slice(0, 200));
      assert.ok(lines.indexOf('out-first') < lines.indexOf('tick 1'));
      assert.deepEqual(lines.filter((l) => l.startsWith('tick')).slice(0, 3), ['tick 1', 'tick 2', 'tick 3']);
      assert.ok(!/[\x00-\x08]/.test(text), 'no frame headers left');
    });
    const two: string = data(await node.get(`/apps/applog/log_${APP}/2`, node.headers.owner));
    assert.equal(two.split('\n').filter(Boolean).length, 2);
    assert.equal(error(await node.get(`/apps/applog/log_${APP}/abc`, node.headers.owner)).code, 400);
    assert.equal(error(await node.get(`/apps/applog/log_${APP}/0`, node.headers.owner)).code, 400);
    // A bare name of a two-component app names no container.
    assert.match(error(await node.get(`/apps/applog/${APP}`, node.headers.owner)).message, /name one as component_inside/);
    assert.equal(error(await node.get(`/apps/applog/nope_${APP}`, node.headers.owner)).code, 404);
    assert.equal(error(await node.get(`/apps/applog/nosuchapp`, node.headers.coreTeam)).code, 404);
  });

  it('applogpolling: newest lines with timestamps, sinceTimestamp to poll on, truncated', async () => {
    await matrix(`/apps/applogpolling/log_${APP}?lineCount=3`, (a) => {
      const d = data(a);
      assert.equal(d.lineCount, 3);
      assert.equal(d.logCount, 3);
      assert.equal(d.truncated, true);
      assert.match(d.logs[2], /^\d{4}-\d\d-\d\dT[\d:.]+Z tick \d+$/);
      assert.equal(d.sinceTimestamp, d.logs[2].split(' ')[0]);
    });
    const first = data(await node.get(`/apps/applogpolling/log_${APP}?lineCount=1`, node.headers.owner));
    const lastTick = Number(first.logs[0].split(' ').pop());
    const next = await until('new lines', async () => {
      const d = data(await node.get(`/apps/applogpolling/log_${APP}?lineCount=1000&since=${encodeURIComponent(first.sinceTimestamp)}`, node.headers.owner));
      return d.logCount ? d : null;
    });
    assert.equal(next.truncated, false);
    assert.equal(Number(next.logs[0].split(' ').pop()), lastTick + 1, 'the poll starts right after the last line seen');
    for (const q of ['lineCount=0', 'lineCount=abc', 'since=yesterday', 'other=1', 'lineCount[$gt]=1'])
      assert.equal(error(await node.get(`/apps/applogpolling/log_${APP}?${q}`, node.headers.owner)).code, 400, q);
  });

  it('appinspect, appstats (disk use of the volume, nanoCpus), apptop, appchanges', async () => {
    await matrix(`/apps/appinspect/log_${APP}`, (a) => assert.equal(data(a).Name, `/${LOGGER}`));
    await matrix(`/apps/appstats/log_${APP}`, (a) => {
      const d = data(a);
      assert.equal(d.nanoCpus, 0.2e9);
      assert.ok(d.memory_stats.limit <= 100 * 1024 * 1024, JSON.stringify(d.memory_stats));
      assert.ok(d.disk_stats.total > 900_000_000 && d.disk_stats.total < 1.1e9, JSON.stringify(d.disk_stats));
      assert.ok(d.disk_stats.used > 0);
    });
    await matrix(`/apps/apptop/log_${APP}`, (a) => {
      const d = data(a);
      assert.ok(d.Titles.includes('PID'));
      assert.ok(d.Processes.some((p: string[]) => p.join(' ').includes('tick')), JSON.stringify(d.Processes));
    });
    await matrix(`/apps/appchanges/log_${APP}`, (a) => {
      const paths = data(a).map((c: any) => c.Path);
      assert.ok(paths.includes('/tmp/changed-file'), JSON.stringify(paths));
    });
    for (const r of ['appinspect', 'appstats', 'apptop', 'appchanges']) {
      assert.equal(error(await node.get(`/apps/${r}/nope_${APP}`, node.headers.owner)).code, 404, r);
      // Level first (the chain's order): the core team passes it and meets the name check.
      assert.equal(error(await node.get(`/apps/${r}/log_${APP}%24`, node.headers.coreTeam)).code, 400, r);
    }
  });

  it('one owner never reaches another app\'s container: not by its name, not by an id prefix', async () => {
    const otherId: string = (await docker.inspect(`corelog_${OTHER}`)).Id;
    assert.equal(error(await node.get(`/apps/applog/log_${OTHER}`, node.headers.owner)).code, 401);
    // An id prefix is no app name: nothing is found (Docker itself would resolve it).
    assert.equal(error(await node.get(`/apps/applog/${otherId.slice(0, 12)}`, node.headers.coreTeam)).code, 404);
    const mine: string = data(await node.get(`/apps/applog/log_${APP}`, node.headers.owner));
    assert.ok(!mine.includes('secret-of-other'));
    const exec = await node.post('/apps/appexec', { appname: `log_${OTHER}`, cmd: 'echo hi' }, node.headers.owner);
    assert.equal(error(exec).code, 401);
  });

  it('appexec: the owner runs a command and gets its output streamed; others refused; bad input', async () => {
    const body = { appname: `log_${APP}`, cmd: ['/bin/sh', '-c', 'echo to-out; echo to-err >&2; echo $GREETING'], env: ['GREETING=hello'] };
    const a = await node.post('/apps/appexec', body, node.headers.owner);
    assert.equal(a.status, 200, a.text);
    assert.match(a.headers.get('content-type') ?? '', /text\/plain/);
    // stdout and stderr are two pipes in Docker: their order against each other is not kept.
    assert.deepEqual(a.text.split('\n').sort(), ['', 'hello', 'to-err', 'to-out']);
    assert.equal((await node.post('/apps/appexec', { appname: `log_${APP}`, cmd: 'ls /tmp' }, node.headers.owner)).text, 'changed-file\n');
    // Level appowner: the owner only (the core team, the admin, another user and anonymous are refused).
    for (const who of ['coreTeam', 'admin', 'other'] as const) assert.equal(error(await node.post('/apps/appexec', body, node.headers[who])).code, 401, who);
    assert.equal(error(await node.post('/apps/appexec', body)).code, 401);
    for (const bad of [{ appname: `log_${APP}` }, { appname: `log_${APP}`, cmd: 5 }, { appname: `log_${APP}`, cmd: [] }, { appname: `log_${APP}`, cmd: 'x', env: ['NOEQUALS'] }])
      assert.equal(error(await node.post('/apps/appexec', bad, node.headers.owner)).code, 400, JSON.stringify(bad));
    assert.equal(error(await node.post('/apps/appexec', { appname: `nope_${APP}`, cmd: 'ls' }, node.headers.owner)).code, 404);
  });

  const terminal = (headers: Record<string, string> | undefined, app = `log_${APP}`) =>
    new WebSocket(`${node.url.replace('http', 'ws')}/ws/apps/exec/${app}`, { headers });

  const refusedUpgrade = (ws: WebSocket) =>
    new Promise<number>((resolve, reject) => {
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => reject(new Error('upgrade accepted')));
      ws.on('error', () => {});
    });

  for (const who of ['owner', 'coreTeam'] as const) {
    it(`the websocket terminal by the ${who}: input and resize frames, output and exit`, async () => {
      const ws = terminal(node.headers[who]);
      const frames: any[] = [];
      ws.on('message', (m) => frames.push(JSON.parse(m.toString())));
      await until('ready', async () => frames.some((f) => f.type === 'ready'));
      ws.send(JSON.stringify({ type: 'resize', cols: 123, rows: 45 }));
      ws.send(JSON.stringify({ type: 'input', data: 'stty size; echo marker-$((6*7))\n' }));
      await until('output', async () => frames.filter((f) => f.type === 'output').map((f) => f.data).join('').includes('marker-42'));
      const out = frames.filter((f) => f.type === 'output').map((f) => f.data).join('');
      assert.match(out, /45 123/);
      ws.send('not json');
      ws.send(JSON.stringify({ type: 'resize', cols: 0, rows: 5 }));
      await until('errors', async () => frames.filter((f) => f.type === 'error').length >= 2);
      ws.send(JSON.stringify({ type: 'input', data: 'exit 3\n' }));
      await until('exit', async () => frames.find((f) => f.type === 'exit'));
      assert.equal(frames.find((f) => f.type === 'exit').code, 3);
      await until('closed', async () => ws.readyState === WebSocket.CLOSED);
    });
  }

  it('the websocket terminal refuses the admin, another user and anonymous (401), and bad names (400)', async () => {
    for (const who of ['admin', 'other'] as const) assert.equal(await refusedUpgrade(terminal(node.headers[who])), 401, who);
    assert.equal(await refusedUpgrade(terminal(undefined)), 401);
    assert.equal(await refusedUpgrade(terminal(node.headers.owner, `log_${OTHER}`)), 401);
    assert.equal(await refusedUpgrade(terminal(node.headers.coreTeam, 'bad$name')), 400);
  });

  it('appmonitor: samples every interval, kept on disk across a node restart; range; levels', async () => {
    const path = `/apps/appmonitor/log_${APP}`;
    const before = await until('3 samples', async () => {
      const s = data(await node.get(path, node.headers.owner));
      return s.length >= 3 && s[s.length - 1].data.cpu !== null ? s : null;
    });
    const s = before[before.length - 1];
    assert.equal(s.data.nanoCpus, 0.2e9);
    assert.ok(s.data.memory > 0 && s.data.disk > 0 && s.data.running, JSON.stringify(s));
    await matrix(path, (a) => assert.ok(data(a).length >= 3));
    assert.equal(data(await node.get(`${path}/1`, node.headers.owner)).length <= 1, true);
    for (const bad of ['abc', '0', '999999999999']) assert.equal(error(await node.get(`${path}/${bad}`, node.headers.owner)).code, 400, bad);

    await node.close({ keepData: true });
    node = await startAppsNode({ docker, ltc, wallets: w, registryAddress, dataDir, apps: { ...appsCfg, monitor: { intervalMs: 3_600_000 } } });
    const after = data(await node.get(path, node.headers.owner));
    assert.ok(after.length >= before.length, `${after.length} samples after the restart, ${before.length} before`);
    assert.deepEqual(after.slice(0, before.length), before);
  });
});
