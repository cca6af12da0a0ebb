/** The manifests watch reloads on a real change only: not at start, not for a touch or a rewrite of the same bytes. */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { eventually, startFixtureNode } from '../support/fixture.ts';

describe('manifest watch', () => {
  it('one real change gives one reload; start-up, touches and identical rewrites give none', async () => {
    const node = await startFixtureNode({ watch: true });
    const reloads: unknown[] = [];
    node.host.events.on('host:routes', (ev) => reloads.push(ev.data));
    try {
      const file = path.join(node.manifests, 'fixture.yaml');
      const text = fs.readFileSync(file, 'utf8');
      const now = new Date();
      fs.utimesSync(file, now, now);
      fs.writeFileSync(file, text);
      fs.writeFileSync(file, text.replace('routes:\n', 'routes:\n  - { id: fixture.late, path: /late, handler: echo }\n'));
      await eventually(async () => (await node.get('/fixture/late')).json?.status === 'success');
      // A last real change flushes anything still pending from the steps above before counting.
      fs.writeFileSync(file, text);
      await eventually(async () => (await node.get('/fixture/late')).status === 404);
      assert.equal(reloads.length, 2, JSON.stringify(reloads));
    } finally {
      await node.close();
    }
  });
});
