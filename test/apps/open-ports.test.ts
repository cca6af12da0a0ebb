/**
 * Which ports the apps plugin holds open (plugins/apps/open-ports.ts), against the node's real event bus and
 * a TEST-ONLY in-memory stand-in of the nodePorts service (what the firewall and the router do is proved in
 * test/node/app-ports*.test.ts and test/testbed/app-ports.test.ts): every installed app's host ports at
 * start, once the node plugin's service is there; an install, a removal and an update by their events;
 * owners of apps no longer installed let go; the node's other owners left alone.
 */
import assert from 'node:assert/strict';
import type { Log } from '../../core/plugin-api.ts';
import { EventBus } from '../../core/services/events.ts';
import type { NodePorts, PortState } from '../../plugins/node/api.ts';
import { hostPorts, openAppPorts } from '../../plugins/apps/open-ports.ts';
import { eventually } from '../support/wait.ts';
import { component, v3Spec, v8Spec } from './support.ts';

/** The service's bookkeeping without a firewall or a router. */
function portsDouble(): NodePorts & { calls: string[] } {
  const held = new Map<number, string[]>();
  const state = (port: number): PortState => ({ port, owners: [...(held.get(port) ?? [])], firewall: 'skipped', upnp: 'disabled', lastError: null });
  const calls: string[] = [];
  return {
    calls,
    async open(port, owner) {
      calls.push(`open ${port} ${owner}`);
      held.set(port, [...new Set([...(held.get(port) ?? []), owner])]);
      return state(port);
    },
    async close(port, owner) {
      calls.push(`close ${port} ${owner}`);
      const left = (held.get(port) ?? []).filter((o) => o !== owner);
      if (left.length) held.set(port, left);
      else held.delete(port);
      return state(port);
    },
    list: () => [...held.keys()].sort((a, b) => a - b).map(state),
  };
}

const silent: Log = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const web = (name: string, ...ports: number[]) => ({ name, appSpecification: v8Spec('1Owner', name, ports.map((p, i) => component(`c${i}`, 'registry.example/a/b:1', p, 8080 + i))) });

describe('apps: the ports held open for installed apps', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());

  it('reads the host ports of every specification version', () => {
    assert.deepEqual(hostPorts(v8Spec('1Owner', 'two', [component('a', 'r/x:1', 31001, 80), component('b', 'r/y:1', 31002, 81)])), [31001, 31002]);
    assert.deepEqual(hostPorts(v3Spec('1Owner', 'three', 'r/x:1', 31003)), [31003]);
    assert.deepEqual(hostPorts({ version: 1, name: 'one', port: 31004, containerPort: 80, repotag: 'r/x:1' }), [31004]);
  });

  it('opens the ports of the installed apps at start, once the node plugin is there, and lets go of apps gone meanwhile', async () => {
    const ports = portsDouble();
    await ports.open(31020, 'app:gone');
    await ports.open(31021, 'upnp:manual'); // another plugin's owner: never touched
    let present: NodePorts | undefined;
    const installed = [web('alpha', 31022, 31023), web('beta', 31022)];
    stop = openAppPorts({ nodePorts: () => present, installed: async () => installed, events: new EventBus(), log: silent }).stop;
    // (the first pass found no service: it runs in the microtasks after the call, before this callback)
    await new Promise((r) => setImmediate(r));
    ports.calls.length = 0;
    present = ports; // the node plugin set up after the apps plugin
    await eventually(() => ports.list().length === 3, { what: 'the start pass', timeoutMs: 5000 });
    assert.deepEqual(ports.list().map((p) => [p.port, p.owners]), [
      [31021, ['upnp:manual']],
      [31022, ['app:alpha', 'app:beta']],
      [31023, ['app:alpha']],
    ]);
    assert.deepEqual(ports.calls, ['open 31022 app:alpha', 'open 31023 app:alpha', 'open 31022 app:beta', 'close 31020 app:gone']);
  });

  it('follows installs, removals and updates by their events, one app at a time', async () => {
    const ports = portsDouble();
    const events = new EventBus();
    const installed = [web('alpha', 31030)];
    stop = openAppPorts({ nodePorts: () => ports, installed: async () => installed, events, log: silent }).stop;
    await eventually(() => ports.list().length === 1, { what: 'the start pass' });

    installed.push(web('beta', 31031, 31032));
    events.emit('apps.installed', { app: 'beta', hash: 'h1' });
    await eventually(() => ports.list().length === 3, { what: 'beta opened' });

    // An update of beta publishing another port (apps.redeployed): the old one is let go.
    installed[1] = web('beta', 31031, 31033);
    events.emit('apps.redeployed', { app: 'beta', hash: 'h2', mode: 'soft' });
    await eventually(() => ports.list().some((p) => p.port === 31033), { what: 'beta updated' });
    assert.deepEqual(ports.list().map((p) => p.port), [31030, 31031, 31033]);

    // Removed (by its owner, expiry, or any removal emitting the event): only its own ports.
    installed.splice(1, 1);
    ports.calls.length = 0;
    events.emit('apps.removed', { app: 'beta', reason: 'expired' });
    await eventually(() => ports.list().length === 1, { what: 'beta closed' });
    assert.deepEqual(ports.calls.sort(), ['close 31031 app:beta', 'close 31033 app:beta']);
    assert.deepEqual(ports.list().map((p) => [p.port, p.owners]), [[31030, ['app:alpha']]]);

    // An event of an app whose ports are held already asks nothing (the passes run in order: once gamma's
    // port is open, the two before it are done).
    ports.calls.length = 0;
    events.emit('apps.installed', { app: 'alpha' });
    events.emit('apps.removed', {});
    installed.push(web('gamma', 31034));
    events.emit('apps.installed', { app: 'gamma' });
    await eventually(() => ports.list().length === 2, { what: 'gamma opened' });
    assert.deepEqual(ports.calls, ['open 31034 app:gamma']);
  });
});
