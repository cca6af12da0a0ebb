/** A server-sent event stream over a raw response, flushed per event. */
import type { ServerResponse } from 'node:http';

export class SseStream {
  private closed = false;
  private keepalive?: NodeJS.Timeout;
  opened = false;

  /** Headers go out with the first write, so a handler can still refuse before it starts streaming. */
  constructor(private readonly res: ServerResponse, private readonly keepaliveMs = 15000) {}

  open(): void {
    if (this.opened) return;
    this.opened = true;
    const res = this.res;
    res.writeHead(200, {
      'Content-Type': 'text/event-stream',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
    this.keepalive = setInterval(() => this.comment('keepalive'), this.keepaliveMs);
    this.keepalive.unref();
    res.on('close', () => this.close());
  }

  get isClosed(): boolean {
    return this.closed;
  }

  send(event: string, data: unknown, id?: number | string): void {
    if (this.closed) return;
    this.open();
    let out = `event: ${event}\n`;
    if (id !== undefined) out += `id: ${id}\n`;
    for (const line of JSON.stringify(data).split('\n')) out += `data: ${line}\n`;
    this.res.write(out + '\n');
  }

  comment(text: string): void {
    if (this.closed) return;
    this.open();
    this.res.write(`: ${text}\n\n`);
  }

  /** Resolves when the client goes away or the stream is closed. */
  done(): Promise<void> {
    this.open();
    return this.closed ? Promise.resolve() : new Promise((resolve) => this.res.once('close', () => resolve()));
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepalive);
    this.res.end();
  }
}
