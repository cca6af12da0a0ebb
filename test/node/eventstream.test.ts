/** The event stream sends keepalive comments on a quiet stream (facts §4.7). */
import assert from 'node:assert/strict';
import { startOpsNode, waitFor } from './support.ts';

describe('event stream keepalive', function () {
  this.timeout(30_000);
  it('sends a keepalive comment on a quiet stream', async () => {
    const node = await startOpsNode({ node: { eventStream: true, eventStreamKeepaliveMs: 200 } });
    const ac = new AbortController();
    try {
      const res = await fetch(`${node.url}/core/eventstream`, { signal: ac.signal });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      let text = '';
      await waitFor(async () => {
        const { value } = await reader.read();
        text += new TextDecoder().decode(value);
        return text.includes(': keepalive');
      }, 10_000, 'a keepalive comment');
    } finally {
      ac.abort();
      await node.close();
    }
  });
});
