/**
 * Volumes tests: a node with the apps and volumes plugins against the shared test Docker and a regtest
 * litecoind, two installed apps (the owner's, whose volume the routes work on, and another user's, whose
 * volume is the neighbour nothing may reach), operations polled to their end.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ensureDocker, unmountUnder, type TestDocker } from '../support/docker.ts';
import { freePortIn } from '../support/ports.ts';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import type { Answer } from '../support/node.ts';
import { eventually } from '../support/wait.ts';
import { component, last, makeWallets, ndjson, registerPaid, startAppsNode, v8Spec, type AppsNode, type Wallets } from '../apps/support.ts';
import { TEST_LIMITS } from './archives.ts';

export const freeTestPort = () => freePortIn(24500, 24999);

export interface VolumesWorld {
  docker: TestDocker;
  ltc: Regtest;
  node: AppsNode;
  w: Wallets;
  dataDir: string;
  /** Host folder of a component's volume. */
  mount(app: string, component: string): string;
}

/** The node server image: it ends on SIGTERM at once, so stop/start during backups is quick. */
async function appSpec(docker: TestDocker, owner: string, name: string) {
  return v8Spec(owner, name, [component('web', docker.images.node, await freeTestPort(), 8080, { cpu: 0.1, ram: 100 })]);
}

export async function startWorld(apps: { app: string; other?: string }, opts: { volumes?: Record<string, unknown>; config?: Record<string, unknown> } = {}): Promise<VolumesWorld> {
  const [docker, ltc] = await Promise.all([ensureDocker(), startLitecoind()]);
  await ltc.mine(101);
  const registryAddress = await ltc.rpc.call<string>('getnewaddress', ['', 'legacy']);
  const w = makeWallets();
  const dataDir = fs.mkdtempSync('/tmp/h15-node-');
  let node: AppsNode | undefined;
  try {
    node = await startAppsNode({
      docker,
      ltc,
      wallets: w,
      registryAddress,
      dataDir,
      plugins: ['volumes'],
      config: { volumes: { ...TEST_LIMITS, shareDir: path.join(dataDir, 'share'), remoteTimeoutMs: 5000, ...opts.volumes }, ...opts.config },
    });
    await registerPaid(node, ltc, registryAddress, w.owner, [await appSpec(docker, w.owner.legacyid, apps.app)]);
    if (apps.other) await registerPaid(node, ltc, registryAddress, w.other, [await appSpec(docker, w.other.legacyid, apps.other)]);
    for (const a of [apps.app, apps.other].filter((x): x is string => !!x)) {
      const lines = ndjson(await node.get(`/apps/installapplocally/${a}`, node.headers.coreTeam));
      assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
    }
    return { docker, ltc, node, w, dataDir, mount: (app, c) => path.join(dataDir, 'apps', 'mounts', `core${c}_${app}`) };
  } catch (e) {
    // A world that did not come up leaves nothing behind (the test's after() has no world to clean).
    await node?.close().catch(() => undefined);
    await ltc.stop().catch(() => undefined);
    await unmountUnder(dataDir).catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw e;
  }
}

/** Poll an operation (as `headers`) until it is no longer Running; answers its data. */
export async function settle(node: AppsNode, started: Answer, headers: Record<string, string>): Promise<any> {
  assert.equal(started.status, 202, started.text);
  const { jobId, statusUrl } = started.json.data;
  assert.equal(started.headers.get('location'), statusUrl);
  return eventually(
    async () => {
      const d = (await node.get(`/apps/operations/${jobId}`, headers)).json?.data;
      return d && d.status !== 'Running' ? d : null;
    },
    { what: `operation ${jobId}`, timeoutMs: 120_000, everyMs: 50 },
  );
}

/**
 * How often a wait on a container polls: each poll is a `docker` CLI process (tens of ms of CPU with
 * dockerd's share), so the default 20 ms made a wait of a few seconds cost seconds of CPU (issue 10).
 */
export const DOCKER_POLL = 200;

export async function containerRunning(docker: TestDocker, name: string): Promise<boolean> {
  return (await docker.inspect(name)).State.Running === true;
}
