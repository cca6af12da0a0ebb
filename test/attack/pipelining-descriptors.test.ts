/**
 * The two remote crashes of issue 11, each against a real node process for 90 s, run at the same time:
 * - pipelining: 8 connections send 1,600 pipelined `GET /openapi.json` each and never read (measured
 *   before: heap +70 MB/s, death within a minute), again whenever the node closes one; plus 4 connections
 *   that trickle 4 KB requests and never read (the node must stop reading them: backpressure);
 * - descriptors: a node under `ulimit -n 1024` with 1,100 idle connections held open (measured before:
 *   EMFILE on an unhandled stream error, exit 62 s after start, at the first run of the identity purge,
 *   which runs every 60 s by default). Here the purge runs every 5 s, so the 36 s attack spans seven runs
 *   of it (the attack lasted 92 s to span one 60 s timer).
 * During both, a caller asking `/core/version` on a fresh connection gets its answer, the node's memory
 * stays bounded and it never exits.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { diskUsage, during, spawnNode, type NodeProcess } from './node-process.ts';

const ATTACK_MS = 36_000;
const PURGE_SECONDS = 5;
const log = (...a: unknown[]) => process.env.ATTACK_LOG && console.log(...a);

interface Report {
  probes: { ok: number; failed: number };
  peakRssMb: number;
  startRssMb: number;
  endRssMb: number;
  peakFds: number;
  exited: boolean;
  attackerSockets: number;
  extra: Record<string, number>;
}

/**
 * Probe a fresh connection every 2 s while sampling RSS and descriptors. The machine is shared (load 17
 * on 2 cores measured): an answer may take seconds, but must come.
 */
async function watch(node: NodeProcess, ms: number, extra: Record<string, number>, path = '/core/version'): Promise<Report> {
  const startRssMb = node.rssMb();
  let peakRssMb = startRssMb;
  let peakFds = 0;
  let n = 0;
  const sampler = setInterval(() => {
    const rss = node.rssMb();
    if (++n % 40 === 0) log(path, 'rss', Math.round(rss), 'MB');
    peakRssMb = Math.max(peakRssMb, rss);
    peakFds = Math.max(peakFds, node.fds());
  }, 250);
  const probes = await during(ms, 2000, async () => {
    const t0 = Date.now();
    try {
      const res = await fetch(node.url + path, { signal: AbortSignal.timeout(15_000), headers: { connection: 'close' } });
      await res.arrayBuffer();
      log(path, res.status, Date.now() - t0, 'ms');
      return res.status === 200;
    } catch (e) {
      log(path, (e as Error).name, (e as Error).cause, Date.now() - t0, 'ms');
      throw e;
    }
  });
  clearInterval(sampler);
  return { probes, peakRssMb, startRssMb, endRssMb: node.rssMb(), peakFds, exited: node.exited(), attackerSockets: 0, extra };
}

/**
 * Every 3 s, 8 new connections send 1,600 pipelined GET /openapi.json each and never read; each is
 * dropped by the client 5 s later (at most 16 live). The attack was one such wave; before: heap
 * +70 MB/s. Twelve waves in the attack's 36 s.
 */
function pipelineFlood(port: number, stop: () => boolean, stats: Record<string, number>): void {
  const burst = 'GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(1600);
  const wave = () => {
    if (stop() || stats.opened >= 8 * 12) return clearInterval(timer);
    for (let i = 0; i < 8; i++) {
      const s = net.connect(port, '127.0.0.1');
      stats.opened++;
      s.on('connect', () => {
        s.pause(); // never read an answer
        s.write(burst);
      });
      s.on('error', () => undefined);
      setTimeout(() => s.destroy(), 5000).unref();
    }
  };
  const timer = setInterval(wave, 3000);
  wave();
}

/** One connection pipelining 1,600 requests and reading: the node answers some, then closes it. */
function deepPipeline(port: number): Promise<{ answers: number; closed: boolean }> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let answers = 0;
    s.on('connect', () => s.write('GET /core/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'.repeat(1600)));
    s.on('data', (b) => (answers += b.toString('latin1').split('HTTP/1.1 200').length - 1));
    s.on('error', () => undefined);
    s.on('close', () => resolve({ answers, closed: true }));
    setTimeout(() => (s.destroy(), resolve({ answers, closed: false })), 20_000).unref();
  });
}

/** 4 connections pipelining 4 KB requests (4 every 10 ms), never reading: the node must stop reading them. */
function trickle(port: number, stop: () => boolean, peak: number[]): net.Socket[] {
  const req = `GET /openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: ${'p'.repeat(4000)}\r\n\r\n`.repeat(4);
  return Array.from({ length: 4 }, (_, i) => {
    const s = net.connect(port, '127.0.0.1');
    peak[i] = 0;
    s.on('error', () => undefined);
    s.on('connect', () => {
      s.pause();
      let sent = 0;
      const t = setInterval(() => {
        // Bounded: the attack's length at most, and no more than 16 MB queued in this process.
        if (stop() || s.destroyed || s.writableLength > 16 << 20 || sent > 40_000) return clearInterval(t);
        s.write(req);
        sent += 4;
        peak[i] = Math.max(peak[i], s.writableLength);
      }, 10);
    });
    return s;
  });
}

/** 1,100 idle connections held open; one the node closes is opened again after 1 s (at most 2,000 times). */
function idleHold(port: number, stop: () => boolean, stats: Record<string, number>): net.Socket[] {
  const all: net.Socket[] = [];
  const open = () => {
    if (stop() || stats.reopened >= 2000) return;
    const s = net.connect(port, '127.0.0.1');
    all.push(s);
    s.resume(); // nothing comes but the close
    s.on('error', () => undefined);
    s.on('close', () => {
      if (stop()) return;
      stats.closedByNode++;
      stats.reopened++;
      setTimeout(open, 1000).unref();
    });
  };
  for (let i = 0; i < 1100; i++) open();
  return all;
}

describe('attack: pipelined requests and descriptor exhaustion (real node processes, 36 s)', function () {
  this.timeout(180_000);
  let piped: NodeProcess;
  let limited: NodeProcess;
  let pipeReport: Promise<Report>;
  let fdReport: Promise<Report>;
  let trickled: net.Socket[] = [];
  const backlog: number[] = [];
  let deep: Promise<{ answers: number; closed: boolean }>;
  let stopped = false;
  const sockets: net.Socket[] = [];

  before(async function () {
    this.timeout(120_000);
    [piped, limited] = await Promise.all([spawnNode(), spawnNode({ nofile: 1024, extraYaml: `identity: { purgeIntervalSeconds: ${PURGE_SECONDS} }\n` })]);
    const stop = () => stopped;
    const pipeStats = { opened: 0 };
    const fdStats = { closedByNode: 0, reopened: 0 };
    deep = deepPipeline(piped.port);
    pipelineFlood(piped.port, stop, pipeStats);
    trickled = trickle(piped.port, stop, backlog);
    sockets.push(...trickled, ...idleHold(limited.port, stop, fdStats));
    pipeReport = watch(piped, ATTACK_MS, pipeStats, '/openapi.json');
    // The descriptor-limited node also stores under attack: a login phrase is a store write each probe.
    fdReport = watch(limited, ATTACK_MS, fdStats, '/id/loginphrase');
  });

  after(async () => {
    stopped = true;
    for (const s of sockets) s.destroy();
    await Promise.all([piped?.stop(), limited?.stop()]);
  });

  it('pipelining: the node keeps answering with bounded memory, stops reading connections that do not read', async () => {
    const r = await pipeReport;
    const d = await deep;
    log('pipelining', r, 'trickle backlog peaks', backlog, 'deep pipeline', d);
    assert.equal(r.exited, false, `the node exited:\n${piped.output().slice(-2000)}`);
    assert.ok(r.probes.ok >= 10 && r.probes.failed <= r.probes.ok / 10, `probes ${JSON.stringify(r.probes)}`);
    // Measured: about 160 MB at the start and about 175 MB at the peak (before: +70 MB/s until death).
    assert.ok(r.peakRssMb < r.startRssMb + 250, `peak RSS ${r.peakRssMb} MB from ${r.startRssMb} MB`);
    assert.ok(r.extra.opened >= 80, `flood connections ${r.extra.opened}`);
    // More than 128 requests waiting on one connection closes it (each costs ~1.7 KB parsed).
    assert.ok(d.closed && d.answers < 1600, `deep pipeline: ${JSON.stringify(d)}`);
    // Backpressure: what the trickling clients wrote piles up on their side, not in the node.
    assert.ok(backlog.some((b) => b > 1 << 20), `trickle backlog ${backlog}`);
    // Once the attackers leave, memory does not keep growing.
    stopped = true;
    for (const s of trickled) s.destroy();
    const after = piped.rssMb();
    await new Promise((res) => setTimeout(res, 3000));
    assert.ok(piped.rssMb() < after + 30, `RSS after the attack ${after} -> ${piped.rssMb()} MB`);
    assert.equal((await piped.get('/core/version')).status, 200);
  });

  it('descriptors: under ulimit -n 1024 and 1,100 idle connections the node never exits and keeps answering', async () => {
    const r = await fdReport;
    log('descriptors', r);
    assert.equal(r.exited, false, `the node exited:\n${limited.output().slice(-2000)}`);
    assert.ok(r.probes.ok >= 10 && r.probes.failed <= r.probes.ok / 10, `probes ${JSON.stringify(r.probes)}`);
    assert.ok(r.peakFds <= 1024, `peak descriptors ${r.peakFds}`);
    assert.ok(r.extra.closedByNode >= 100, 'idle connections over the cap are closed');
    assert.ok(r.peakRssMb < r.startRssMb + 250, `peak RSS ${r.peakRssMb} MB from ${r.startRssMb} MB`);
    assert.doesNotMatch(limited.output(), /Unhandled 'error' event/);
    assert.ok(diskUsage(limited.dataDir) < 20 << 20, 'disk stays bounded');
    assert.equal((await limited.get('/core/version')).status, 200);
  });
});
