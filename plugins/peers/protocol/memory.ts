/**
 * An in-memory transport: links between PeerNodes of one process, each frame delivered after a latency
 * through a scheduler, so the simulation runs the real protocol code on virtual time.
 */
import type { Link, Transport } from './transport.ts';

export interface Scheduler {
  now(): number;
  at(delayMs: number, fn: () => void): { clear(): void };
}

/** A discrete-event scheduler: `run()` executes events in time order, advancing the virtual clock. */
export class VirtualTime implements Scheduler {
  t = 0;
  private heap: { at: number; seq: number; fn: () => void; dead: boolean }[] = [];
  private seq = 0;
  now() {
    return this.t;
  }
  at(delayMs: number, fn: () => void) {
    const ev = { at: this.t + Math.max(0, delayMs), seq: this.seq++, fn, dead: false };
    const h = this.heap;
    h.push(ev);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (this.less(h[p], h[i])) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
    return { clear: () => void (ev.dead = true) };
  }
  private less(a: { at: number; seq: number }, b: { at: number; seq: number }) {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }
  private pop() {
    const h = this.heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && this.less(h[l], h[m])) m = l;
        if (r < h.length && this.less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }
  /** Run events until none is left before `untilMs` (virtual); awaits microtasks between events. */
  async run(untilMs = Infinity) {
    while (this.heap.length && this.heap[0].at <= untilMs) {
      const ev = this.pop();
      if (ev.dead) continue;
      this.t = ev.at;
      ev.fn();
      await null;
    }
    if (untilMs !== Infinity) this.t = Math.max(this.t, untilMs);
  }
}

class MemLink implements Link {
  other!: MemLink;
  closed = false;
  private early: [string | Buffer, boolean][] = [];
  // Frames that arrive before the protocol attached its listener are held, not lost.
  private msg: (d: string | Buffer, b: boolean) => void = (d, b) => void this.early.push([d, b]);
  private close_: (code: number, reason: string) => void = () => {};
  constructor(readonly remoteIp: string, private readonly sched: Scheduler, private readonly latency: () => number) {}
  /** Bytes sent on this link (the simulation's traffic figures). */
  bytes = 0;
  send(data: string | Buffer) {
    if (this.closed) throw new Error('link closed');
    this.bytes += data.length;
    const o = this.other;
    this.sched.at(this.latency(), () => !o.closed && o.msg(data, typeof data !== 'string'));
  }
  /** Frames are delivered by the scheduler; nothing waits on the sender's side. */
  buffered() {
    return 0;
  }
  abort() {
    this.close(1006, 'aborted');
  }
  close(code = 1000, reason = '') {
    if (this.closed) return;
    this.closed = true;
    const o = this.other;
    this.sched.at(this.latency(), () => {
      if (o.closed) return;
      o.closed = true;
      o.close_(code, reason);
    });
  }
  onMessage(fn: (d: string | Buffer, b: boolean) => void) {
    this.msg = fn;
    for (const [d, b] of this.early.splice(0)) fn(d, b);
  }
  onClose(fn: (code: number, reason: string) => void) {
    this.close_ = fn;
  }
}

/** One network of in-memory nodes: `listen(ip, port, accept)` then `transport(fromIp).connect(ip, port)`. */
export class MemoryNetwork {
  private readonly listeners = new Map<string, (l: Link) => void>();
  /** `latency(a, b)`: one-way delay in ms between two IPs (fixed per pair, so shortest paths are defined). */
  constructor(readonly sched: Scheduler, readonly latency: (a: string, b: string) => number = () => 20) {}
  listen(ip: string, port: number, accept: (l: Link) => void) {
    this.listeners.set(`${ip}:${port}`, accept);
  }
  unlisten(ip: string, port: number) {
    this.listeners.delete(`${ip}:${port}`);
  }
  transport(fromIp: string): Transport {
    return {
      connect: async (ip, port) => {
        const accept = this.listeners.get(`${ip}:${port}`);
        if (!accept) throw new Error(`connect ECONNREFUSED ${ip}:${port}`);
        const ms = this.latency(fromIp, ip);
        const mine = new MemLink(ip, this.sched, () => ms);
        const theirs = new MemLink(fromIp, this.sched, () => ms);
        mine.other = theirs;
        theirs.other = mine;
        accept(theirs);
        return mine;
      },
    };
  }
}
