/**
 * Commands in an app's container: `POST /apps/appexec` streams a command's output (stdout and stderr
 * demultiplexed, as plain text) and the websocket terminal (`/ws/apps/exec/:appname`) gives an
 * interactive TTY. Frames of the terminal, JSON text both ways:
 *   client -> node  {"type":"input","data":"ls\n"}   {"type":"resize","cols":120,"rows":40}
 *   node -> client  {"type":"output","data":"..."}   {"type":"exit","code":0}   {"type":"error","message":"..."}
 * The container is looked up by its exact name from the installed record (inside.ts).
 */
import { reply, type HandlerInput, type Socket } from '../../core/plugin-api.ts';
import type { Engine } from './engine.ts';
import { argvOf, envOf, inspectTarget, type Target } from './inside.ts';
import { Demux } from './logstream.ts';

/** Largest terminal frame the node reads (a paste); bigger frames close the socket. */
const MAX_FRAME = 64 * 1024;
/**
 * Terminal output the node queues for a client before it stops reading the command's output (a websocket
 * has no backpressure of its own): the command then blocks on its terminal until the client reads.
 */
const MAX_QUEUED = 1 << 20;
const DRAIN_POLL_MS = 50;

export async function execStream(engine: Engine, t: Target, body: Record<string, unknown>) {
  const argv = argvOf(body.cmd);
  const env = envOf(body.env);
  await inspectTarget(engine, t);
  const exec = await engine.container(t.container).exec({ Cmd: argv, Env: env, AttachStdout: true, AttachStderr: true, Tty: false });
  const stream = await exec.start({ hijack: true, stdin: false });
  // Piped, so a client that reads slowly slows the read from Docker and the command in the container
  // blocks on its output. dockerode's demuxStream wrote whatever came into the answer, read or not: a command
  // printing without end to a client that read nothing grew the node by what it printed.
  const out = stream.pipe(new Demux(false));
  out.on('error', () => {});
  const end = () => {
    if (!out.writableEnded) out.end();
  };
  stream.on('close', end);
  stream.on('error', end);
  // A client that goes away ends the exec's attachment; the command itself runs to its end in the container.
  out.on('close', () => stream.destroy());
  return reply(200, out, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
}

export async function terminal(engine: Engine, t: Target, input: HandlerInput, ws: Socket): Promise<void> {
  const send = (o: Record<string, unknown>) => {
    if (ws.readyState === 1) ws.send(JSON.stringify(o));
  };
  const cmd = typeof input.values.cmd === 'string' && input.values.cmd ? input.values.cmd : '/bin/sh';
  await inspectTarget(engine, t);
  const exec = await engine.container(t.container).exec({ Cmd: [cmd], AttachStdin: true, AttachStdout: true, AttachStderr: true, Tty: true, Env: ['TERM=xterm'] });
  const stream = await exec.start({ hijack: true, stdin: true, Tty: true } as any);
  send({ type: 'ready', container: t.container });
  let draining: ReturnType<typeof setInterval> | undefined;
  stream.on('data', (d: Buffer) => {
    send({ type: 'output', data: d.toString('utf8') });
    if (draining || ws.bufferedAmount <= MAX_QUEUED) return;
    stream.pause();
    draining = setInterval(() => {
      if (ws.readyState === 1 && ws.bufferedAmount > MAX_QUEUED) return;
      clearInterval(draining);
      draining = undefined;
      stream.resume();
    }, DRAIN_POLL_MS);
  });
  let closed = false;
  const finish = async () => {
    if (closed) return;
    closed = true;
    const code = await exec
      .inspect()
      .then((i) => i.ExitCode)
      .catch(() => null);
    send({ type: 'exit', code });
    ws.close(1000);
  };
  stream.on('end', () => void finish());
  stream.on('error', () => void finish());
  let pending: Promise<unknown> = Promise.resolve();
  ws.on('message', (data) => {
    if (data.length > MAX_FRAME) {
      send({ type: 'error', message: `frame over ${MAX_FRAME} bytes` });
      ws.close(1009);
      return;
    }
    let m: any;
    try {
      m = JSON.parse(data.toString('utf8'));
    } catch {
      return send({ type: 'error', message: 'frames are JSON: {"type":"input","data":"..."} or {"type":"resize","cols":n,"rows":n}' });
    }
    // Frames apply in the order sent: input typed after a resize runs at the new size (a resize is a
    // Docker API call, which input written at once would overtake).
    if (m?.type === 'input' && typeof m.data === 'string') pending = pending.then(() => void stream.write(m.data));
    else if (m?.type === 'resize' && Number.isInteger(m.cols) && Number.isInteger(m.rows) && m.cols > 0 && m.rows > 0 && m.cols <= 1000 && m.rows <= 1000)
      pending = pending.then(() => exec.resize({ h: m.rows, w: m.cols })).catch((e) => send({ type: 'error', message: `resize: ${(e as Error).message}` }));
    else send({ type: 'error', message: 'unknown frame: expected {"type":"input","data":string} or {"type":"resize","cols":1-1000,"rows":1-1000}' });
  });
  ws.on('close', () => {
    closed = true;
    clearInterval(draining);
    stream.end();
    stream.destroy();
  });
}
