/**
 * Runs inside a network namespace (the UPnP tests start it with `nsenter --net=...`): a node of the node
 * plugin (startOpsNode) with the config given as JSON in argv[2], reachable from the test outside the
 * namespace through a unix socket at argv[3] (a filesystem socket crosses network namespaces; TCP would need
 * a link into the machine's own network). Prints `ready <its temp folder>` once it serves (a test that kills
 * it with SIGKILL removes the folder); SIGTERM stops the node (its plugin disposal runs: the UPnP mappings it
 * keeps are removed), removes the folder and exits 0.
 */
import fs from 'node:fs';
import net from 'node:net';
import { startOpsNode } from './support.ts';

const [opts, socketPath] = [JSON.parse(process.argv[2]), process.argv[3]];
const node = await startOpsNode(opts);
const port = Number(new URL(node.url).port);
fs.rmSync(socketPath, { force: true });
const bridge = net
  .createServer((c) => {
    const u = net.connect(port, '127.0.0.1');
    c.pipe(u).pipe(c);
    c.on('error', () => u.destroy());
    u.on('error', () => c.destroy());
  })
  .listen(socketPath, () => console.log(`ready ${node.root}`));

process.once('SIGTERM', async () => {
  bridge.close();
  await node.close();
  process.exit(0);
});
