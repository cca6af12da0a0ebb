/**
 * Command output a tenant can make the node hold. B (a paying owner) runs a command in its own container that
 * prints 200 MB, through `POST /apps/appexec` and through the terminal websocket, and reads none of it. The
 * command counts the megabytes it got out into a file of its container: with the node reading Docker only as
 * fast as its client reads, the count stops after a few megabytes and the node's RSS stays where it was.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import WebSocket from 'ws';
import type { TestDocker } from '../support/docker.ts';
import type { Regtest } from '../support/litecoind.ts';
import { IDLE, component, last, ndjson, until, v8Spec } from '../apps/support.ts';
import { freeTenantPort, registerAndPay, paidWorld, startTenantNode, tenantWallets, type TenantNode } from './node.ts';

const APP = 'execflood';
const CONTAINER = `coreweb_${APP}`;
const TOTAL_MB = 200;
/** Prints TOTAL_MB megabytes, writing how many are out after each. */
const flood = (file: string) => `i=0; while [ $i -lt ${TOTAL_MB} ]; do head -c 1048576 /dev/zero; i=$((i+1)); echo $i > ${file}; done`;

describe('tenants: command output nobody reads (appexec and the terminal)', function () {
  this.timeout(300_000);
  const w = tenantWallets();
  let docker: TestDocker;
  let ltc: Regtest;
  let node: TenantNode;

  before(async () => {
    let registryAddress: string;
    ({ docker, ltc, registryAddress } = await paidWorld());
    node = await startTenantNode({ docker, ltc, registryAddress, wallets: w });
    await registerAndPay(node, ltc, registryAddress, 'b', w, v8Spec(w.b.legacyid, APP, [component('web', docker.images.busybox, await freeTenantPort(), 8080, { commands: IDLE })]));
    const lines = ndjson(await node.get(`/apps/installapplocally/${APP}`, node.headers.admin));
    assert.equal(last(lines).status, 'success', JSON.stringify(last(lines)));
  });
  after(async () => {
    await node?.stop();
    await ltc?.stop();
  });

  /** Megabytes the command got out so far (0 before its first). */
  const out = async (file: string) => Number((await docker.cli(['exec', CONTAINER, 'cat', file]).catch(() => '0')).trim() || 0);

  /**
   * Wait until the command is done or stuck: its count reached the total, or stayed the same over ten
   * looks at it (each a docker exec, a few hundred ms on this machine), while the node's RSS is sampled.
   */
  async function settle(file: string, rssBefore: number): Promise<{ mb: number; rise: number }> {
    let peak = rssBefore;
    let same = 0;
    let prev = -1;
    await until(`the output of ${file} done or stuck`, async () => {
      const mb = await out(file);
      peak = Math.max(peak, node.rssMb());
      same = mb === prev ? same + 1 : 0;
      prev = mb;
      return mb >= TOTAL_MB || same >= 10;
    }, 240_000);
    return { mb: prev, rise: peak - rssBefore };
  }

  it('appexec: the command blocks on its output while the client reads nothing; the node holds none of it', async () => {
    const before = node.rssMb();
    const body = JSON.stringify({ appname: APP, cmd: ['sh', '-c', flood('/tmp/http-mb')] });
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: node.port, path: '/apps/appexec', method: 'POST', headers: { ...node.headers.b, 'content-type': 'application/json' } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    res.pause();
    try {
      assert.equal(res.statusCode, 200);
      const { mb, rise } = await settle('/tmp/http-mb', before);
      console.log(`      appexec, unread: ${mb} of ${TOTAL_MB} MB out of the command; node RSS +${rise.toFixed(1)} MB`);
      assert.ok(mb < TOTAL_MB / 4, `the command got ${mb} MB out to a client that read nothing`);
      assert.ok(rise < 50, `the node's RSS rose ${rise.toFixed(1)} MB`);
    } finally {
      res.destroy();
    }
  });

  it('the terminal: output queued for a client that reads nothing stops at a bound; the command blocks', async () => {
    const before = node.rssMb();
    const ws = new WebSocket(`ws://127.0.0.1:${node.port}/ws/apps/exec/${APP}`, { headers: node.headers.b });
    await new Promise<void>((resolve, reject) => {
      ws.once('message', () => resolve());
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ type: 'input', data: `${flood('/tmp/ws-mb')}\n` }));
    ws.pause(); // from here the client reads nothing
    try {
      const { mb, rise } = await settle('/tmp/ws-mb', before);
      console.log(`      terminal, unread: ${mb} of ${TOTAL_MB} MB out of the command; node RSS +${rise.toFixed(1)} MB`);
      assert.ok(mb < TOTAL_MB / 4, `the command got ${mb} MB out to a client that read nothing`);
      assert.ok(rise < 50, `the node's RSS rose ${rise.toFixed(1)} MB`);
    } finally {
      ws.terminate();
    }
  });
});
