#!/usr/bin/env node
/**
 * A byte forwarder between TCP and unix sockets, with no dependency (plain JavaScript: it starts with
 * `node forward.mjs` in a host's network namespace, without tsx, in about 40 ms of CPU).
 *
 *   node forward.mjs [--delay <ms>] <listen> <connect> [<listen> <connect> ...]
 *
 * Each address is `tcp:HOST:PORT` (an IPv6 host in brackets, `tcp:[::1]:80`) or `unix:/path`. Every
 * connection to a `<listen>` is piped to a new connection to its `<connect>`. Once every listener is up it
 * prints one line, `ready` followed by the bound addresses (a TCP port 0 shows the port the kernel chose).
 *
 * It is how the testbed crosses network namespaces: a filesystem unix socket is reachable from every
 * namespace, a TCP port only from its own. Started inside a namespace with
 * `nsenter --net=/run/netns/<ns> -- node forward.mjs ...` (not `ip netns exec`, which remounts /sys and so
 * breaks a dockerd started the same way). `--delay` holds every chunk that long in each direction, in
 * order: the testbed's latency between two hosts (`tc netem` is not available here).
 */
import fs from 'node:fs';
import net from 'node:net';

function parse(a) {
  if (a.startsWith('unix:')) return { path: a.slice(5) };
  const m = /^tcp:(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(a);
  if (!m) throw new Error(`not tcp:HOST:PORT or unix:/path: ${a}`);
  return { host: m[1] ?? m[2], port: Number(m[3]) };
}

/** Copy `from` into `to`, each chunk `delay` ms late (same delay for all: timers fire in order). */
function pipe(from, to, delay) {
  if (!delay) return from.pipe(to);
  from.on('data', (d) => setTimeout(() => to.writable && to.write(d), delay));
  from.on('end', () => setTimeout(() => to.end(), delay));
}

const argv = process.argv.slice(2);
let delay = 0;
if (argv[0] === '--delay') {
  delay = Number(argv[1]);
  argv.splice(0, 2);
}
if (argv.length === 0 || argv.length % 2) {
  console.error('usage: node forward.mjs [--delay <ms>] <listen> <connect> [<listen> <connect> ...]');
  process.exit(2);
}

const bound = [];
for (let i = 0; i < argv.length; i += 2) {
  const listen = parse(argv[i]);
  const target = parse(argv[i + 1]);
  const server = net.createServer({ allowHalfOpen: true }, (c) => {
    const u = net.connect({ ...target, allowHalfOpen: true });
    pipe(c, u, delay);
    pipe(u, c, delay);
    c.on('error', () => u.destroy());
    u.on('error', () => c.destroy());
    c.on('close', () => setTimeout(() => u.destroy(), delay));
    u.on('close', () => setTimeout(() => c.destroy(), delay));
  });
  if (listen.path) fs.rmSync(listen.path, { force: true });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.path ? { path: listen.path } : { host: listen.host, port: listen.port }, resolve);
  });
  const a = server.address();
  bound.push(typeof a === 'string' ? `unix:${a}` : `tcp:${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`);
}
console.log(`ready ${bound.join(' ')}`);
// The parent going away (its end of stdout closed) is not a reason to stop: it kills this by its pid.
process.stdout.on('error', () => {});
for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => process.exit(0));
