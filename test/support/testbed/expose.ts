/**
 * A TCP port in the runner's namespace (127.0.0.1, a port the kernel chooses) piped to a unix socket that
 * a forwarder inside a host's namespace serves: how the runner and a person at the machine reach a node's
 * API (`http://127.0.0.1:<port>`) without an interface or route added to the machine's own network. In the
 * runner's process rather than a forwarder process of its own: one process less per node.
 */
import net from 'node:net';

export interface Exposed {
  port: number;
  close(): Promise<void>;
}

export async function exposeUnix(socketPath: string): Promise<Exposed> {
  const conns = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (c) => {
    const u = net.connect({ path: socketPath, allowHalfOpen: true });
    conns.add(c).add(u);
    c.pipe(u).pipe(c);
    c.on('error', () => u.destroy());
    u.on('error', () => c.destroy());
    c.on('close', () => (u.destroy(), conns.delete(c)));
    u.on('close', () => (c.destroy(), conns.delete(u)));
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of conns) c.destroy();
        server.close(() => resolve());
      }),
  };
}
