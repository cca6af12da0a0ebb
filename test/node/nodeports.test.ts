/**
 * keepupnpportsopen and checkappavailability: bodies signed by another node of the network (its key in the
 * daemon's deterministic list, at the body's ip) or an admin or core team session. A real regtest litecoind
 * behind the TEST-ONLY corenode RPC double answers the node list; the asking node is a second real node;
 * the ports touched are real TCP and UDP sockets on loopback.
 */
import assert from 'node:assert/strict';
import bitcoinMessage from 'bitcoinjs-message';
import crypto from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { SigningKey } from 'ethers';
import { startLitecoind, type Regtest } from '../support/litecoind.ts';
import { startCorenodeRpcDouble, type CorenodeRpcDouble } from './doubles/corenode-rpc-double.ts';
import { CORE_TEAM, MEMBER, asOperator, authAs, err, ok, startOpsNode, waitFor } from './support.ts';

function nodeKey() {
  const privateKey = crypto.randomBytes(32);
  const pubKey = new SigningKey('0x' + privateKey.toString('hex')).compressedPublicKey.slice(2);
  /** The body with `pubKey` and its signature over the JSON of the rest (the order given). */
  const sign = (body: Record<string, unknown>) => {
    const signed = { ...body, pubKey };
    return { ...signed, signature: bitcoinMessage.sign(JSON.stringify(signed), privateKey, true).toString('base64') };
  };
  return { pubKey, sign };
}

describe('node-to-node port checks (keepupnpportsopen, checkappavailability)', function () {
  this.timeout(120_000);
  let ltc: Regtest;
  let rpc: CorenodeRpcDouble;
  let node: Awaited<ReturnType<typeof startOpsNode>>;
  let asker: Awaited<ReturnType<typeof startOpsNode>>;
  let askerPort: number;
  const signer = nodeKey();
  const stranger = nodeKey();
  const tcpHits = new Map<number, number>();
  const udpHits = new Map<number, number>();
  const servers: (net.Server | dgram.Socket)[] = [];
  const now = () => Math.floor(Date.now() / 1000);

  before(async () => {
    ltc = await startLitecoind();
    rpc = await startCorenodeRpcDouble(ltc);
    node = await startOpsNode({
      withDaemon: true,
      daemon: { rpc: { url: rpc.url, user: ltc.user, password: ltc.password }, cache: { ttlMs: 0, blockTtlMs: 0 } },
      node: { ports: { appMin: 25400, appMax: 25449, banned: [25420], touchGapMs: 10 }, availability: { timeoutMs: 1500 } },
    });
    asker = await startOpsNode();
    askerPort = Number(new URL(asker.url).port);
    rpc.nodeList = [{ ip: `127.0.0.1:${askerPort}`, pubkey: signer.pubKey } as { ip: string }];
    for (const port of [25410, 25411]) {
      const s = net.createServer((c) => {
        tcpHits.set(port, (tcpHits.get(port) ?? 0) + 1);
        c.on('error', () => {});
        c.destroy();
      });
      await new Promise<void>((r) => s.listen(port, '127.0.0.1', r));
      const u = dgram.createSocket('udp4');
      u.on('message', () => udpHits.set(port, (udpHits.get(port) ?? 0) + 1));
      await new Promise<void>((r) => u.bind(port, '127.0.0.1', r));
      servers.push(s, u);
    }
  });
  after(async () => {
    for (const s of servers) s.close();
    await node?.close();
    await asker?.close();
    await rpc?.close();
    await ltc?.stop();
  });

  const keep = (ports: number[], extra: Record<string, unknown> = {}) => ({ ip: '127.0.0.1', apiPort: askerPort, ports, timestamp: now(), ...extra });

  it('keepupnpportsopen: a listed node’s signed body gets its ports touched by TCP and UDP', async () => {
    const d = ok(await node.post('/core/keepupnpportsopen', signer.sign(keep([25410, 25411]))));
    assert.deepEqual(d, { message: 'Ports of 127.0.0.1 are being kept open: 25410, 25411' });
    await waitFor(() => [25410, 25411].every((p) => (tcpHits.get(p) ?? 0) >= 1 && (udpHits.get(p) ?? 0) >= 1), 10_000, 'both ports touched by TCP and UDP');
  });

  it('keepupnpportsopen: admin and core team sessions need no signature; others are refused', async () => {
    assert.match(ok(await node.post('/core/keepupnpportsopen', keep([25411]), asOperator())).message, /being kept open/);
    assert.match(ok(await node.post('/core/keepupnpportsopen', keep([25411]), authAs(CORE_TEAM))).message, /being kept open/);
    assert.equal(err(await node.post('/core/keepupnpportsopen', keep([25411]), authAs(MEMBER))).code, 401);
    assert.equal(err(await node.post('/core/keepupnpportsopen', keep([25411]))).code, 401);
  });

  it('keepupnpportsopen: refuses unlisted keys, other addresses, altered bodies, old timestamps, unreachable nodes', async () => {
    assert.match(err(await node.post('/core/keepupnpportsopen', stranger.sign(keep([25410])))).message, /No node of the network is listed/);
    assert.match(err(await node.post('/core/keepupnpportsopen', signer.sign(keep([25410], { ip: '127.0.0.2' })))).message, /No node of the network is listed at 127\.0\.0\.2/);
    const altered = { ...signer.sign(keep([25410])), ports: [25411] };
    assert.match(err(await node.post('/core/keepupnpportsopen', altered)).message, /signature is not valid/);
    const old = err(await node.post('/core/keepupnpportsopen', signer.sign(keep([25410], { timestamp: now() - 601 }))));
    assert.deepEqual([old.code, old.name], [422, 'SignatureExpired']);
    const closed = err(await node.post('/core/keepupnpportsopen', keep([25410], { apiPort: 25449 }), asOperator()));
    assert.deepEqual([closed.code, closed.name], [503, 'NotReachable']);
  });

  it('checkappavailability: a listed node’s apps answer on their ports (inside the app range, banned ports skipped)', async () => {
    const body = { ip: '127.0.0.1', port: askerPort, ports: [25410, 25411, 25420, 25300] };
    assert.deepEqual(ok(await node.post('/core/checkappavailability', signer.sign(body))), { message: `Core Applications on 127.0.0.1:${askerPort} are available.` });
    const down = err(await node.post('/core/checkappavailability', signer.sign({ ...body, ports: [25410, 25412] })));
    assert.equal(down.name, 'AppsNotAvailable');
    assert.match(down.message, /port 25412 did not answer/);
    // The spec's level is public: an anonymous node with a signature is served; the alternative is a session.
    assert.match(ok(await node.post('/core/checkappavailability', body, authAs(CORE_TEAM))).message, /are available/);
    assert.equal(err(await node.post('/core/checkappavailability', body, authAs(MEMBER))).code, 401);
    assert.equal(err(await node.post('/core/checkappavailability', stranger.sign(body))).code, 401);
  });

  it('both: refuse bad input with the field named', async () => {
    for (const route of ['/core/keepupnpportsopen', '/core/checkappavailability']) {
      const base = route.endsWith('open') ? keep([25410]) : { ip: '127.0.0.1', port: askerPort, ports: [25410] };
      const cases: [unknown, RegExp][] = [
        [{ ...base, ip: 'localhost' }, /ip must be an IPv4 address/],
        [{ ...base, ports: '25410' }, /ports/],
        [{ ...base, ports: [0] }, /ports must be at least 1/],
        [{ ...base, ports: Array.from({ length: 300 }, () => 25410) }, /ports has more than/],
        [{ ...base, pubKey: 'zz' }, /pubKey must be a node public key/],
        [{ ...base, ip: undefined }, /ip is required/],
        ['[1,2]', /JSON object/],
        ['not json', /./],
      ];
      for (const [body, why] of cases) {
        const e = err(await node.post(route, body, asOperator()));
        assert.equal(e.code, 400, `${route} ${JSON.stringify(body).slice(0, 60)}: ${e.message}`);
        assert.match(e.message, why);
      }
      const big = await node.post(route, JSON.stringify({ ...base, pad: 'x'.repeat(9000) }), asOperator());
      assert.equal(big.status, 413);
    }
  });
});
