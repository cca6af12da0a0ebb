/**
 * Free TCP ports on 127.0.0.1 for tests. The suite's shards run in parallel, so an area that binds fixed
 * ports asks in a range of its own and cannot take a port another shard is about to bind: deployer
 * 22000-22999, registries 23000-23099, apps 23100-23999 and 28000-28999, identity 24100-24499, volumes
 * 24500-24999, CLI 25000-25999 (the start bench 25900-25999), attack 26000-26999, file sync 27300-27399.
 * Daemons and the rest take the kernel's choice (`freePort`).
 *
 * A port is free only until its test binds it, and tests often ask for two before binding either (a daemon's
 * RPC and P2P ports, two apps of one spec). CI once gave two apps of one test the same port from a random
 * start in a range of 1,000, and the second install failed on the clash. So a port is handed out once per
 * process, whichever function hands it out.
 */
import net from 'node:net';

const handedOut = new Set<number>();

function bindable(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(null));
    srv.listen(port, '127.0.0.1', () => {
      const bound = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(bound));
    });
  });
}

/** A free port in [lo, hi], tried from a random start, never one handed out before in this process. */
export async function freePortIn(lo: number, hi: number): Promise<number> {
  const size = hi - lo + 1;
  const start = Math.floor(Math.random() * size);
  for (let i = 0; i < size; i++) {
    const port = lo + ((start + i) % size);
    if (handedOut.has(port)) continue;
    if ((await bindable(port)) !== null) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port in ${lo}-${hi}`);
}

/** A free port the kernel chooses (its ephemeral range), never one handed out before in this process. */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 1000; i++) {
    const port = await bindable(0);
    if (port === null) throw new Error('the kernel gave no port on 127.0.0.1');
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('the kernel gave only ports already handed out');
}

/**
 * Mark ports as handed out without binding them: the neighbours of a node's API port (API - 1 to API + 3)
 * are the node's own, which apps may not publish, so an app of the same test must not be given one.
 */
export function holdPorts(ports: number[]): void {
  for (const p of ports) handedOut.add(p);
}
