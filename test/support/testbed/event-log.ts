/**
 * Every event of the testbed's nodes, as it happens: one `/core/eventstream` per node (the nodes need
 * `node.eventStream`), read by this process and stamped with its clock on arrival, so that the nodes'
 * events and the test's own moments (a payment mined, a kill, a cut) are on one clock. A node's ring keeps
 * only its last 1,024 events and a killed node loses them: listening from the start keeps them all.
 * The stream of a node that stopped is opened again once it runs; a new process numbers its events from 1
 * again, so the stream is then read from its start. Plain-HTTP nodes only (fetch; no testbed certificate).
 */
import type { TestbedNode } from './index.ts';

export interface LoggedEvent {
  node: string;
  /** Arrival, this process's clock (ms). */
  at: number;
  name: string;
  data: any;
}

export class EventLog {
  readonly events: LoggedEvent[] = [];
  private readonly ac = new AbortController();
  private readonly loops: Promise<void>[];

  constructor(nodes: readonly TestbedNode[]) {
    this.loops = nodes.map((n) => this.follow(n));
  }

  /** The events matching `pred`, in arrival order. */
  where(pred: (e: LoggedEvent) => boolean): LoggedEvent[] {
    return this.events.filter(pred);
  }

  /** Events of one name (and app, when given: `data.app`), optionally since a moment. */
  named(name: string, app?: string, since = 0): LoggedEvent[] {
    return this.where((e) => e.name === name && (app === undefined || e.data?.app === app) && e.at >= since);
  }

  async stop(): Promise<void> {
    this.ac.abort();
    await Promise.allSettled(this.loops);
  }

  private async follow(n: TestbedNode): Promise<void> {
    let pid: number | undefined;
    let lastId = 0;
    const { signal } = this.ac;
    while (!signal.aborted) {
      if (!n.running()) {
        await pause(300, signal);
        continue;
      }
      if (n.pid !== pid) [pid, lastId] = [n.pid, 0];
      try {
        const res = await fetch(`${n.url}/core/eventstream`, { headers: { 'last-event-id': String(lastId) }, signal });
        if (res.status !== 200 || !res.body) throw new Error(`eventstream of ${n.name}: ${res.status}`);
        const decoder = new TextDecoder();
        let buf = '';
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buf += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            const field = (f: string) => new RegExp(`^${f}: ?(.*)$`, 'm').exec(block)?.[1];
            const [id, name, d] = [field('id'), field('event'), field('data')];
            if (id) lastId = Number(id);
            if (name && d !== undefined) this.events.push({ node: n.name, at: Date.now(), name, data: JSON.parse(d) });
          }
        }
      } catch {
        // The node went away (killed, stopping) or is not answering yet: try again shortly.
      }
      await pause(300, signal);
    }
  }
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });
