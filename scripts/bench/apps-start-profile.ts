/**
 * `npx tsx scripts/bench/apps-start-profile.ts`: where a container start of the node's install spends its
 * time. Each variant creates a container of the cached node image through the API and times `start` alone,
 * changing one thing at a time from Docker's plain case (default bridge, one TCP port) towards what the
 * node makes (its own fresh network, TCP+UDP published, limits, a bind mount). Rounds alternate variants.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { ensureDocker, stopDocker } from '../../test/support/docker.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const d = await ensureDocker();
  const docker = new Docker({ socketPath: d.socketPath });
  await d.cli(['pull', d.images.node]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'apps-prof-'));
  const port = 24100;
  type V = { name: string; net?: 'fresh' | 'kept'; udp?: boolean; limits?: boolean; bind?: boolean; cpu?: boolean; extras?: boolean };
  const variants: V[] = [
    { name: 'default bridge, TCP' },
    { name: 'default bridge, TCP+UDP', udp: true },
    { name: 'kept network, TCP', net: 'kept' },
    { name: 'fresh network, TCP', net: 'fresh' },
    { name: 'default bridge, TCP, limits', limits: true },
    { name: 'default bridge, TCP, NanoCpus 0.5 only', cpu: true },
    { name: 'default bridge, TCP, extra host, log opts, nofile', extras: true },
    { name: 'default bridge, TCP, bind', bind: true },
    { name: 'fresh network, TCP+UDP, limits, bind (the node)', net: 'fresh', udp: true, limits: true, bind: true },
  ];
  await docker.createNetwork({ Name: 'profkept', Driver: 'bridge', IPAM: { Config: [{ Subnet: '172.23.251.0/24' }] } });
  const times: Record<string, number[]> = {};
  try {
    for (let r = 0; r < ROUNDS; r++)
      for (const v of variants) {
        let net: string | undefined;
        if (v.net === 'fresh') {
          await docker.createNetwork({ Name: 'proffresh', Driver: 'bridge', IPAM: { Config: [{ Subnet: '172.23.252.0/24' }] } });
          net = 'proffresh';
        } else if (v.net === 'kept') net = 'profkept';
        const exposed: Record<string, {}> = { '8080/tcp': {} };
        const bindings: Record<string, unknown[]> = { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: String(port) }] };
        if (v.udp) {
          exposed['8080/udp'] = {};
          bindings['8080/udp'] = [{ HostIp: '127.0.0.1', HostPort: String(port) }];
        }
        const c = await docker.createContainer({
          name: 'profc',
          Image: d.images.node,
          ExposedPorts: exposed,
          HostConfig: {
            PortBindings: bindings,
            ...(net ? { NetworkMode: net } : {}),
            ...(v.limits ? { NanoCpus: 0.5e9, Memory: 200 * 2 ** 20, MemorySwap: 2200 * 2 ** 20, Ulimits: [{ Name: 'nofile', Soft: 20000, Hard: 20000 }] } : {}),
            ...(v.bind ? { Binds: [`${dir}:/data`] } : {}),
            ...(v.cpu ? { NanoCpus: 0.5e9 } : {}),
            ...(v.extras ? { ExtraHosts: ['corenode.service:169.254.43.43'], LogConfig: { Type: 'json-file', Config: { 'max-size': '20m', 'max-file': '1' } }, Ulimits: [{ Name: 'nofile', Soft: 20000, Hard: 20000 }] } : {}),
          },
        });
        const t0 = performance.now();
        await c.start();
        (times[v.name] ??= []).push(performance.now() - t0);
        await c.remove({ force: true });
        if (v.net === 'fresh') await docker.getNetwork('proffresh').remove();
      }
  } finally {
    await docker.getNetwork('profkept').remove().catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(`container start alone, median of ${ROUNDS} (ms):`);
  for (const v of variants) console.log(`  ${v.name.padEnd(52)} ${median(times[v.name]).toFixed(0).padStart(5)}   [${times[v.name].map((x) => x.toFixed(0)).join(', ')}]`);
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => stopDocker());
