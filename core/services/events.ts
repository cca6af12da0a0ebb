/** The node's event bus: plugins emit named events; the event stream replays the last ones by id. */
import { EventEmitter } from 'node:events';

export interface NodeEvent {
  id: number;
  name: string;
  data: unknown;
}

const RING = 1024;

export class EventBus {
  private readonly emitter = new EventEmitter();
  private readonly ring: NodeEvent[] = [];
  private seq = 0;

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  emit(name: string, data: unknown = {}): NodeEvent {
    const ev = { id: ++this.seq, name, data };
    this.ring.push(ev);
    if (this.ring.length > RING) this.ring.shift();
    this.emitter.emit(name, ev);
    this.emitter.emit('*', ev);
    return ev;
  }

  /** Listen to one name, or '*' for all; returns the unsubscribe function. */
  on(name: string, fn: (ev: NodeEvent) => void): () => void {
    this.emitter.on(name, fn);
    return () => this.emitter.off(name, fn);
  }

  /** Events after `lastId` still held in the ring (for `Last-Event-ID`). */
  since(lastId: number): NodeEvent[] {
    return this.ring.filter((e) => e.id > lastId);
  }
}
