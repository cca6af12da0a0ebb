/** lib/daemon-rpc/deadline.ts: one call's deadline, linked to the caller's signal and released at the end. */
import assert from 'node:assert/strict';
import { deadline } from '../../lib/daemon-rpc/deadline.ts';
import { eventually } from '../support/wait.ts';

describe('daemon RPC client: a call deadline', () => {
  it('aborts with a TimeoutError when the time is up', async () => {
    const d = deadline(5);
    await eventually(() => d.signal.aborted);
    assert.equal((d.signal.reason as Error).name, 'TimeoutError');
  });

  it("follows the caller's signal, with the caller's reason; an already aborted caller aborts it at once", () => {
    const caller = new AbortController();
    const d = deadline(60_000, caller.signal);
    assert.equal(d.signal.aborted, false);
    caller.abort(new Error('gone'));
    assert.equal((d.signal.reason as Error).message, 'gone');
    d.done();
    const late = deadline(60_000, caller.signal);
    assert.equal((late.signal.reason as Error).message, 'gone');
    late.done();
  });

  it("once done, neither the timer nor the caller's signal aborts it", async () => {
    const caller = new AbortController();
    const d = deadline(5, caller.signal);
    d.done();
    const later = deadline(20);
    await eventually(() => later.signal.aborted); // well past the first one's 5 ms
    caller.abort();
    assert.equal(d.signal.aborted, false);
  });
});

describe('daemon RPC client: many call deadlines under one signal', () => {
  it('abort together with it, and a caller with more calls than EventTarget warns about stays quiet', async () => {
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on('warning', onWarning);
    try {
      const caller = new AbortController();
      const ds = Array.from({ length: 40 }, () => deadline(60_000, caller.signal));
      ds.slice(0, 20).forEach((d) => d.done());
      caller.abort(new Error('stopped'));
      assert.deepEqual(ds.map((d) => d.signal.aborted), [...Array(20).fill(false), ...Array(20).fill(true)]);
      ds.forEach((d) => d.done());
      // Warnings are emitted on a later tick.
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings.map((w) => w.name), []);
  });
});
