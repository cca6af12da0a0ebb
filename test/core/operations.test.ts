/** Long-running operations (spec: Long-running operation, States): 202, polling, cancel, expiry, eviction. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { TestClock, tempDir, type TestNode } from '../support/node.ts';
import { USER, eventually, sessionFor, startFixtureNode } from '../support/fixture.ts';

const OTHER = '1AnotherUserxxxxxxxxxxxxxxxxxxxxx';

describe('operations', () => {
  let node: TestNode;
  const clock = new TestClock();
  before(async () => {
    node = await startFixtureNode({ clock, config: { queue: { concurrency: 2, retentionSeconds: 60 } } });
  });
  after(() => node.close());
  afterEach(() => node.host.gates.set('fixture.release', false));

  const start = async (body: unknown = {}, who = USER) => {
    const res = await node.post('/fixture/job', body, sessionFor(who));
    assert.equal(res.status, 202, res.text);
    return res;
  };
  const poll = (jobId: string, who = USER) => node.get(`/apps/operations/${jobId}`, sessionFor(who));
  const settled = (jobId: string) =>
    eventually(async () => {
      const res = await poll(jobId);
      return res.json.data.status !== 'Running' && res;
    });

  it('answers 202 with Location, Retry-After and the Running record, then Succeeded with the result', async () => {
    const res = await start({ n: 1 });
    const { jobId, statusUrl, status } = res.json.data;
    assert.equal(res.json.status, 'success');
    assert.equal(status, 'Running');
    assert.equal(statusUrl, `/apps/operations/${jobId}`);
    assert.equal(res.headers.get('location'), statusUrl);
    assert.equal(res.headers.get('retry-after'), '2');
    assert.equal((await poll(jobId)).json.data.status, 'Running');
    node.host.gates.set('fixture.release', true);
    const done = await settled(jobId);
    assert.equal(done.status, 200);
    assert.equal(done.json.status, 'success');
    assert.equal(done.json.data.status, 'Succeeded');
    assert.deepEqual(done.json.data.result, { done: true, input: { n: 1 } });
    assert.equal(done.json.data.owner, undefined, 'the owner id is not echoed');
  });

  it('a failed operation is a successful poll whose data carries an RFC 9457 problem', async () => {
    node.host.gates.set('fixture.release', true);
    const typed = await settled((await start({ fail: true })).json.data.jobId);
    assert.equal(typed.json.status, 'success');
    assert.equal(typed.json.data.status, 'Failed');
    const p = typed.json.data.error;
    assert.deepEqual(p, { type: 'about:blank', title: 'Unprocessable', status: 422, detail: 'the fixture job was told to fail', instance: `/apps/operations/${typed.json.data.jobId}` });
    const crash = await settled((await start({ crash: true })).json.data.jobId);
    assert.equal(crash.json.data.error.status, 500);
    assert.equal(crash.json.data.error.title, 'OperationFailed');
    assert.ok(!JSON.stringify(crash.json).includes('untyped failure'), 'the cause stays in the log');
  });

  it('DELETE asks to cancel: the status stays Running until the worker reaches its checkpoint, then Canceled', async () => {
    const started = new Promise((resolve) => {
      const off = node.host.events.on('fixture:job-started', () => (off(), resolve(undefined)));
    });
    const { jobId } = (await start()).json.data;
    await started;
    const del = await node.request('DELETE', `/apps/operations/${jobId}`, { headers: sessionFor(USER) });
    assert.equal(del.status, 200);
    assert.deepEqual(del.json.data, { jobId, statusUrl: `/apps/operations/${jobId}`, status: 'Running', cancelRequested: true });
    assert.equal((await poll(jobId)).json.data.status, 'Running', 'best effort: nothing changes before the checkpoint');
    node.host.gates.set('fixture.release', true);
    assert.equal((await settled(jobId)).json.data.status, 'Canceled');
  });

  it('unknown, not-owned and anonymous polls: 404, 404 and 401', async () => {
    const { jobId } = (await start()).json.data;
    for (const res of [
      await poll('00000000-0000-0000-0000-000000000000'),
      await poll(jobId, OTHER),
      await node.request('DELETE', `/apps/operations/${jobId}`, { headers: sessionFor(OTHER) }),
    ]) {
      assert.equal(res.status, 404);
      assert.equal(res.json.status, 'error');
      assert.equal(res.json.data.code, 404);
    }
    assert.equal((await node.get(`/apps/operations/${jobId}`)).json.data.code, 401);
    assert.equal((await node.post('/fixture/job', {})).json.data.code, 401, 'starting one needs a session too');
    assert.equal((await poll(jobId)).json.data.status, 'Running', 'the owner still sees it');
    node.host.gates.set('fixture.release', true);
    await settled(jobId);
  });

  it('a finished record expires after the retention time (404)', async () => {
    node.host.gates.set('fixture.release', true);
    const { jobId } = (await start()).json.data;
    await settled(jobId);
    clock.advance(59_000);
    assert.equal((await poll(jobId)).json.data.status, 'Succeeded');
    clock.advance(2_000);
    assert.equal((await poll(jobId)).status, 404);
  });
});

describe('operations across a restart', () => {
  it('a job that was running when the node died reads as Evicted after restart', async () => {
    const dataDir = tempDir();
    const first = await startFixtureNode({ dataDir });
    const { jobId } = (await first.post('/fixture/job', {}, sessionFor(USER))).json.data;
    const file = path.join(dataDir, 'host', 'operations.db');
    await eventually(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8').includes(jobId));
    // The first node never shuts down cleanly before the second reads the store: a crash, as the store sees it.
    const second = await startFixtureNode({ dataDir });
    try {
      const res = await second.get(`/apps/operations/${jobId}`, sessionFor(USER));
      assert.equal(res.json.data.status, 'Evicted');
      assert.equal(res.json.data.error.status, 503);
      assert.equal(res.json.data.error.title, 'Evicted');
    } finally {
      await second.close({ keepData: true });
      await first.close({ keepData: true });
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a clean shutdown evicts running work, and the record survives the restart', async () => {
    const dataDir = tempDir();
    const first = await startFixtureNode({ dataDir });
    const { jobId } = (await first.post('/fixture/job', {}, sessionFor(USER))).json.data;
    await first.close({ keepData: true });
    const second = await startFixtureNode({ dataDir });
    try {
      const res = await second.get(`/apps/operations/${jobId}`, sessionFor(USER));
      assert.equal(res.json.data.status, 'Evicted');
      assert.match(res.json.data.error.detail, /shutting down/);
    } finally {
      await second.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
