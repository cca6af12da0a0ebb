/**
 * Ports and UPnP routes: `mapport`, `unmapport`, `getmap`, `getip`, `getgateway` (the router's IGD, see
 * upnp.ts), and the two node-to-node checks `keepupnpportsopen` and `checkappavailability` (facts §4.6):
 * another node of the network (signed body, nodesig.ts) or an admin or core team session asks this node to
 * touch, or to connect to, ports of that node's own address.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import { ApiError, type HandlerInput, type Log } from '../../core/plugin-api.ts';
import { callNode } from '../../lib/node-http/request.ts';
import type { DaemonService } from '../daemon/api.ts';
import { checkNodeSignature } from './nodesig.ts';
import type { NodeConfig } from './settings.ts';
import type { Upnp } from './upnp.ts';

const MANUAL = 'Core_manual_entry';

/** Connect, then reset at once: the router sees traffic on the mapping, the app sees a closed attempt. */
function touchTcp(ip: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: ip, port });
    const done = (ok: boolean) => {
      clearTimeout(t);
      s.resetAndDestroy();
      resolve(ok);
    };
    const t = setTimeout(() => done(false), timeoutMs);
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

function touchUdp(ip: string, port: number): Promise<void> {
  return new Promise((resolve) => {
    const s = dgram.createSocket(net.isIPv6(ip) ? 'udp6' : 'udp4');
    s.once('error', () => (s.close(), resolve()));
    s.send(Buffer.from([0]), port, ip, () => (s.close(), resolve()));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function portHandlers(deps: { config: NodeConfig; upnp: Upnp; daemon: () => DaemonService | undefined; log: Log }) {
  const { config, upnp, log } = deps;
  const privileged = (caller: HandlerInput['caller']) => caller.isAdmin || caller.isCoreTeam;

  return {
    async mapport({ values }: HandlerInput) {
      const port = values.port as number;
      await upnp.map(port, ['TCP', 'UDP'], MANUAL);
      return { message: `Port ${port} mapped through UPnP (TCP and UDP)` };
    },
    async unmapport({ values }: HandlerInput) {
      const port = values.port as number;
      const removed = await upnp.unmap(port, ['TCP', 'UDP']);
      if (!removed.length) throw new ApiError(404, 'NotMapped', `Port ${port} is not mapped on the gateway`);
      return { message: `Port ${port} unmapped (${removed.join(' and ')})` };
    },
    getmap: () => upnp.list(),
    getip: () => upnp.publicIp(),
    getgateway: () => upnp.gateway(),

    async keepupnpportsopen({ values, body, caller }: HandlerInput) {
      if (!privileged(caller)) {
        await checkNodeSignature(body, deps.daemon());
        const age = Math.floor(Date.now() / 1000) - Number(values.timestamp);
        if (!Number.isFinite(age) || Math.abs(age) > config.ports.signatureMaxAgeSeconds)
          throw new ApiError(422, 'SignatureExpired', `The signed timestamp is more than ${config.ports.signatureMaxAgeSeconds} s away from this node's clock`);
      }
      const { ip, apiPort } = values as { ip: string; apiPort: number };
      const ports = [...new Set(values.ports as number[])];
      // The asking node must answer at its address first: only a live node's mappings are kept open.
      try {
        // Over HTTPS where the node offers it, else plain HTTP (lib/node-http).
        const res = await callNode(ip, apiPort, '/core/uptime', { timeoutMs: config.availability.timeoutMs, maxBytes: 4096 });
        if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status}`);
      } catch (e) {
        throw new ApiError(503, 'NotReachable', `Core ${ip}:${apiPort} is not reachable (${((e as Error).message ?? '').slice(0, 100)})`);
      }
      // Answered now; the ports are touched one after another in the background.
      void (async () => {
        for (const port of ports) {
          await touchTcp(ip, port, config.availability.timeoutMs);
          await touchUdp(ip, port);
          await sleep(config.ports.touchGapMs);
        }
      })().catch((e) => log.warn({ err: (e as Error).message }, 'keepupnpportsopen: touching ports failed'));
      return { message: `Ports of ${ip} are being kept open: ${ports.join(', ')}` };
    },

    async checkappavailability({ values, body, caller }: HandlerInput) {
      if (!privileged(caller)) await checkNodeSignature(body, deps.daemon());
      const { ip, port } = values as { ip: string; port: number };
      const { appMin, appMax, banned } = config.ports;
      const ports = [...new Set(values.ports as number[])].filter((p) => p >= appMin && p <= appMax && !banned.includes(p));
      for (const p of ports)
        if (!(await touchTcp(ip, p, config.availability.timeoutMs)))
          throw new ApiError(503, 'AppsNotAvailable', `Core Applications on ${ip}:${port} are not available: port ${p} did not answer`);
      return { message: `Core Applications on ${ip}:${port} are available.` };
    },
  };
}
