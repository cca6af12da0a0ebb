/** The deployment queue's rules, with a run function the test controls (the deployments themselves are in deploy.test.ts). */
import assert from 'node:assert/strict';
import { DeployQueue, type DeployRequest } from '../../plugins/deployer/queue.ts';

const req = (commit: string): DeployRequest => ({ commit, provider: 'github', deliveryId: commit, receivedAt: Date.now() });

/** A run function whose deployments end when the test says so. */
function controlled() {
  const started: string[] = [];
  const finish: Array<(fail?: boolean) => void> = [];
  let concurrent = 0;
  let maxConcurrent = 0;
  const run = (r: DeployRequest) =>
    new Promise<void>((resolve, reject) => {
      started.push(r.commit!);
      maxConcurrent = Math.max(maxConcurrent, ++concurrent);
      finish.push((fail) => {
        concurrent--;
        if (fail) reject(new Error('deployment failed'));
        else resolve();
      });
    });
  return { started, finish, run, max: () => maxConcurrent };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('deployer queue', () => {
  it('without debounce: runs at once, one at a time; the newest request takes the single slot', async () => {
    const c = controlled();
    const q = new DeployQueue({ debounceMs: 0, run: c.run });
    q.submit(req('a'));
    q.submit(req('b'));
    q.submit(req('c'));
    assert.deepEqual(c.started, ['a']);
    assert.equal(q.pending?.commit, 'c');
    c.finish[0]();
    await tick();
    assert.deepEqual(c.started, ['a', 'c']);
    assert.equal(q.pending, null);
    c.finish[1]();
    await q.idle();
    assert.equal(c.max(), 1);
  });

  it('a failed deployment does not block the next', async () => {
    const c = controlled();
    const errors: unknown[] = [];
    const q = new DeployQueue({ debounceMs: 0, run: c.run, onError: (e) => errors.push(e) });
    q.submit(req('a'));
    q.submit(req('b'));
    c.finish[0](true);
    await tick();
    assert.deepEqual(c.started, ['a', 'b']);
    assert.equal(errors.length, 1);
    c.finish[1]();
    await q.idle();
  });

  it('debounces a burst into one request for the newest commit, and reports the slot for persistence', async () => {
    const c = controlled();
    const slots: Array<string | null> = [];
    const q = new DeployQueue({ debounceMs: 50, run: c.run, onPending: (r) => slots.push(r?.commit ?? null) });
    for (const x of ['a', 'b', 'c', 'd']) q.submit(req(x));
    assert.equal(q.debouncing, true);
    assert.deepEqual(c.started, []);
    await new Promise((r) => setTimeout(r, 120));
    assert.deepEqual(c.started, ['d']);
    assert.deepEqual(slots, ['a', 'b', 'c', 'd', null]);
    c.finish[0]();
    await q.idle();
  });

  it('close stops taking work and leaves the pending request for the next start', async () => {
    const c = controlled();
    const q = new DeployQueue({ debounceMs: 0, run: c.run });
    q.submit(req('a'));
    q.submit(req('b'));
    const closing = q.close();
    c.finish[0]();
    await closing;
    q.submit(req('c'));
    assert.deepEqual(c.started, ['a']);
    assert.equal(q.pending?.commit, 'b');
  });
});
