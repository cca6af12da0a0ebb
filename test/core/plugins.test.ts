/** Operators enable and disable plugins per node: in the config, through the host, and via the state file. */
import assert from 'node:assert/strict';
import path from 'node:path';
import { writeState } from '../../core/plugins/state.ts';
import type { TestNode } from '../support/node.ts';
import { eventually, startFixtureNode } from '../support/fixture.ts';

const DISABLED = {
  status: 'error',
  data: { code: 503, name: 'PluginDisabled', message: 'The fixture plugin is disabled on this node; its operator can enable it with corectl' },
};

describe('plugin enable/disable', () => {
  it('a shutdown lets the request being served finish before connections close', async () => {
    const node = await startFixtureNode();
    const started = new Promise((resolve) => {
      const off = node.host.events.on('fixture:slow-started', () => (off(), resolve(undefined)));
    });
    const slow = node.get('/fixture/slow');
    await started;
    const closing = node.close();
    node.host.gates.set('fixture.slow', true);
    assert.deepEqual((await slow).json, { status: 'success', data: 'slow done' });
    await closing;
    await assert.rejects(node.get('/fixture/echo'), 'the node no longer listens');
  });

  it('a plugin disabled in the config answers a clear error naming it, at HTTP 200', async () => {
    const node = await startFixtureNode({ config: { plugins: { fixture: false } } });
    try {
      const res = await node.get('/fixture/echo');
      assert.equal(res.status, 200);
      assert.deepEqual(res.json, DISABLED);
      assert.deepEqual((await node.get('/fx/echo')).json, DISABLED, 'aliases too');
      assert.equal((await node.get('/openapi.json')).status, 200, 'other plugins serve');
    } finally {
      await node.close();
    }
  });

  describe('at run time', () => {
    let node: TestNode;
    const disposed: number[] = [];
    before(async () => {
      node = await startFixtureNode({ watch: true });
      node.host.events.on('fixture:disposed', (ev) => disposed.push(ev.id));
    });
    after(() => node.close());

    it('host.setPluginEnabled takes effect at once, disposes the plugin, and sets it up again', async () => {
      const res = await node.host.setPluginEnabled('fixture', false);
      assert.equal(res.ok, true);
      assert.deepEqual((await node.get('/fixture/echo')).json, DISABLED);
      assert.equal(disposed.length, 1);
      await node.host.setPluginEnabled('fixture', true);
      assert.equal((await node.get('/fixture/echo')).json.status, 'success');
    });

    it('the state file that corectl writes is applied by the running host', async () => {
      const file = path.join(node.dataDir, 'plugins.json');
      writeState(file, { fixture: false });
      await eventually(async () => (await node.get('/fixture/echo')).json.data.name === 'PluginDisabled');
      writeState(file, { fixture: true });
      await eventually(async () => (await node.get('/fixture/echo')).json.status === 'success');
    });

    it('refuses to disable the host itself', async () => {
      const res = await node.host.setPluginEnabled('host', false);
      assert.equal(res.ok, false);
      assert.equal((await node.get('/openapi.json')).status, 200);
    });

    it('a request in flight finishes on the plugin it started with; the plugin is disposed after it', async () => {
      const started = new Promise((resolve) => {
        const off = node.host.events.on('fixture:slow-started', () => (off(), resolve(undefined)));
      });
      const slow = node.get('/fixture/slow');
      await started;
      const before = disposed.length;
      const disabling = node.host.setPluginEnabled('fixture', false);
      assert.deepEqual((await node.get('/fixture/echo')).json, DISABLED, 'new requests see the change at once');
      assert.equal(disposed.length, before, 'not disposed while its request runs');
      node.host.gates.set('fixture.slow', true);
      assert.deepEqual((await slow).json, { status: 'success', data: 'slow done' });
      await disabling;
      assert.equal(disposed.length, before + 1);
      node.host.gates.set('fixture.slow', false);
      await node.host.setPluginEnabled('fixture', true);
    });
  });
});
