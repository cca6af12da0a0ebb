/**
 * UPnP port mapping through the router's Internet Gateway Device (IGD), with `@runonflux/nat-upnp` for SSDP
 * discovery and the SOAP calls. The gateway is found by SSDP at each use (a router that restarts or a
 * changed LAN address is picked up; one search costs up to `upnp.searchTimeoutMs`), or read from
 * `upnp.gatewayUrl` (its root description) when set. The library's own mapping list treats "no mappings"
 * as an error and misreads `NewEnabled`, so the list is read here with its SOAP call.
 *
 * The node keeps its own ports mapped while it runs (facts §4.6): the API port, API+1 (HTTPS), API-1 (the
 * home UI), API+2 (file sync, TCP and UDP), refreshed every `upnp.refreshMinutes` and removed at stop.
 */
import dgram from 'node:dgram';
import type { Client, Device } from '@runonflux/nat-upnp';
import { createRequire } from 'node:module';
import { ApiError, type Log } from '../../core/plugin-api.ts';
import type { NodeConfig } from './settings.ts';

export type Protocol = 'TCP' | 'UDP';

export interface UpnpMapping {
  public: { host: string; port: number };
  private: { host: string; port: number };
  protocol: string;
  enabled: boolean;
  description: string;
  ttl: number;
  local: boolean;
}

interface Gateway {
  gateway: Device;
  /** This node's address on the gateway's network (the mapping's internal client). */
  address: string;
}

/** The UPnP error of a SOAP fault (`<errorCode>718</errorCode><errorDescription>ConflictInMappingEntry`), if any. */
function upnpError(e: unknown): { code: number; description: string } | null {
  const data = (e as { response?: { data?: unknown } })?.response?.data;
  const text = typeof data === 'string' ? data : '';
  const m = /<errorCode>(\d+)<\/errorCode>\s*(?:<errorDescription>([^<]*)<\/errorDescription>)?/.exec(text);
  return m ? { code: Number(m[1]), description: m[2] ?? '' } : null;
}

function failure(action: string, e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  const u = upnpError(e);
  if (u) return new ApiError(502, 'UpnpRefused', `The gateway refused ${action}: ${u.code} ${u.description}`.trim());
  const code = (e as { code?: string })?.code;
  if (code && ['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT'].includes(code))
    return new ApiError(503, 'UpnpUnavailable', `The UPnP gateway does not answer (${code})`);
  const msg = (e as Error)?.message ?? String(e);
  // The library turns an unreadable description into a TypeError on its missing `root.device`.
  if (e instanceof TypeError && /'device'/.test(msg)) return new ApiError(503, 'UpnpUnavailable', "The UPnP gateway's description cannot be read");
  return new ApiError(502, 'UpnpFailed', `${action} through the gateway failed: ${msg.slice(0, 200)}`);
}

/** The key of `<action>Response` in the library's parsed SOAP answer (namespace prefixes vary). */
function responseOf(raw: Record<string, unknown> | undefined, action: string): Record<string, unknown> {
  const key = Object.keys(raw ?? {}).find((k) => k === `${action}Response` || k.endsWith(`:${action}Response`));
  if (!key) throw new ApiError(502, 'UpnpFailed', `The gateway's answer to ${action} is not in the expected form`);
  return ((raw as Record<string, unknown>)[key] ?? {}) as Record<string, unknown>;
}

/** The local address the kernel would use towards `host` (a connected UDP socket sends nothing). */
function localAddressTowards(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = dgram.createSocket('udp4');
    s.once('error', (e) => (s.close(), reject(e)));
    s.connect(port, host, () => {
      const a = s.address().address;
      s.close();
      resolve(a);
    });
  });
}

// Loaded by the first UPnP call: most nodes never make one (upnp.enabled is off by default), and imported at
// start it cost about 50 ms of CPU (measured).
const require = createRequire(import.meta.url);
const natUpnp = () => require('@runonflux/nat-upnp') as typeof import('@runonflux/nat-upnp');

export function createUpnp(config: NodeConfig['upnp']) {
  async function withGateway<T>(action: string, fn: (g: Gateway) => Promise<T>): Promise<T> {
    let client: Client | undefined;
    let g: Gateway;
    try {
      if (config.gatewayUrl) {
        const url = new URL(config.gatewayUrl);
        // The library reads the description at each call but hides why it could not: ask first.
        const res = await fetch(config.gatewayUrl, { signal: AbortSignal.timeout(config.searchTimeoutMs), redirect: 'error' });
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`its description answers HTTP ${res.status}`);
        g = { gateway: new (natUpnp().Device)(config.gatewayUrl), address: await localAddressTowards(url.hostname, Number(url.port) || 80) };
      } else {
        client = new (natUpnp().Client)({ timeout: config.searchTimeoutMs });
        g = await client.getGateway();
      }
    } catch (e) {
      client?.close();
      const why = ((e as Error).cause as Error | undefined)?.message ?? (e as Error).message ?? '';
      throw new ApiError(
        503,
        'UpnpUnavailable',
        config.gatewayUrl ? `The UPnP gateway at ${config.gatewayUrl} does not answer (${why.slice(0, 120)})` : `No UPnP gateway answered within ${config.searchTimeoutMs} ms (${why.slice(0, 120)})`,
      );
    }
    // The library's HTTP calls have no timeout: a gateway that accepts and never answers is cut here.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ApiError(503, 'UpnpUnavailable', `The UPnP gateway did not answer ${action} within ${config.requestTimeoutMs} ms`)), config.requestTimeoutMs);
    });
    try {
      return await Promise.race([fn(g), deadline]);
    } catch (e) {
      throw failure(action, e);
    } finally {
      clearTimeout(timer);
      client?.close();
    }
  }

  async function run(g: Gateway, action: string, args: (string | number)[][]) {
    return responseOf((await g.gateway.run(action, args)) as Record<string, unknown>, action);
  }

  const api = {
    async map(port: number, protocols: Protocol[], description: string, ttlSeconds = config.leaseSeconds): Promise<void> {
      await withGateway('AddPortMapping', async (g) => {
        for (const protocol of protocols)
          await run(g, 'AddPortMapping', [
            ['NewRemoteHost', ''],
            ['NewExternalPort', port],
            ['NewProtocol', protocol],
            ['NewInternalPort', port],
            ['NewInternalClient', g.address],
            ['NewEnabled', 1],
            ['NewPortMappingDescription', description],
            ['NewLeaseDuration', ttlSeconds],
          ]);
      });
    },
    /** Removes the port's mappings of these protocols; answers the protocols that were mapped. */
    async unmap(port: number, protocols: Protocol[]): Promise<Protocol[]> {
      return withGateway('DeletePortMapping', async (g) => {
        const removed: Protocol[] = [];
        for (const protocol of protocols) {
          try {
            // Some gateways (miniupnpd) answer a removal of nothing with success: ask first.
            await run(g, 'GetSpecificPortMappingEntry', [
              ['NewRemoteHost', ''],
              ['NewExternalPort', port],
              ['NewProtocol', protocol],
            ]);
            await run(g, 'DeletePortMapping', [
              ['NewRemoteHost', ''],
              ['NewExternalPort', port],
              ['NewProtocol', protocol],
            ]);
            removed.push(protocol);
          } catch (e) {
            // 714 NoSuchEntryInArray: nothing mapped there (not an error for a removal).
            if (upnpError(e)?.code !== 714) throw e;
          }
        }
        return removed;
      });
    },
    async list(): Promise<UpnpMapping[]> {
      return withGateway('GetGenericPortMappingEntry', async (g) => {
        const out: UpnpMapping[] = [];
        for (let i = 0; i < config.maxListed; i++) {
          let r: Record<string, unknown>;
          try {
            r = await run(g, 'GetGenericPortMappingEntry', [['NewPortMappingIndex', i]]);
          } catch (e) {
            // 713 SpecifiedArrayIndexInvalid ends the list (at index 0: there are none).
            if (upnpError(e)?.code === 713) break;
            throw e;
          }
          const host = String(r.NewInternalClient ?? '');
          out.push({
            public: { host: typeof r.NewRemoteHost === 'string' ? r.NewRemoteHost : '', port: Number(r.NewExternalPort) },
            private: { host, port: Number(r.NewInternalPort) },
            protocol: String(r.NewProtocol ?? '').toLowerCase(),
            enabled: String(r.NewEnabled) === '1',
            description: String(r.NewPortMappingDescription ?? ''),
            ttl: Number(r.NewLeaseDuration) || 0,
            local: host === g.address,
          });
        }
        return out;
      });
    },
    async publicIp(): Promise<string> {
      return withGateway('GetExternalIPAddress', async (g) => String((await run(g, 'GetExternalIPAddress', [])).NewExternalIPAddress ?? ''));
    },
    async gateway(): Promise<{ gateway: { description: string; services: string[] }; address: string }> {
      return withGateway('the gateway description', async (g) => ({ gateway: { description: g.gateway.description, services: [...g.gateway.services] }, address: g.address }));
    },
  };
  return api;
}

export type Upnp = ReturnType<typeof createUpnp>;

/**
 * The node's own ports: what the reference keeps mapped for a node on API port `api` (its SSL port is API + 1),
 * and the port the node serves HTTPS on when it is another one (`api.tls.port`): peers reach it there.
 */
export function ownPorts(api: number, httpsPort = 0): { port: number; protocols: Protocol[]; description: string }[] {
  return [
    { port: api, protocols: ['TCP'], description: 'Core_API' },
    { port: api + 1, protocols: ['TCP'], description: 'Core_API_SSL' },
    { port: api - 1, protocols: ['TCP'], description: 'Core_Home_UI' },
    { port: api + 2, protocols: ['TCP', 'UDP'], description: 'Core_Syncthing' },
    ...(httpsPort > 0 && httpsPort !== api && httpsPort !== api + 1 ? [{ port: httpsPort, protocols: ['TCP'] as Protocol[], description: 'Core_API_SSL' }] : []),
  ];
}

/**
 * Keeps the node's own ports mapped while `upnp.enabled`: a round at start (in the background: a router
 * that does not answer must not hold the node's start), again every `refreshMinutes`, and a removal at stop.
 * A failed round is logged and tried again at the next one. `alsoEachRound` runs after the own ports in
 * every round, whether they were mapped or not (the ports apps hold, app-ports.ts).
 */
export function keepOwnPorts(upnp: Upnp, apiPort: number, config: NodeConfig['upnp'], log: Log, httpsPort = 0, alsoEachRound?: () => Promise<void>) {
  const ports = ownPorts(apiPort, httpsPort);
  let round: Promise<void> = Promise.resolve();
  let stopped = false;
  let mapped = false;
  const once = async () => {
    try {
      for (const p of ports) await upnp.map(p.port, p.protocols, p.description);
      mapped = true;
      log.info({ ports: ports.map((p) => p.port) }, 'UPnP: own ports mapped');
    } catch (e) {
      mapped = false;
      log.warn({ err: (e as Error).message }, 'UPnP: mapping the own ports failed; tried again at the next round');
    }
    await alsoEachRound?.().catch((e) => log.warn({ err: (e as Error).message }, 'UPnP: the round of the held ports failed'));
  };
  const tick = () => {
    if (!stopped) round = round.then(once);
  };
  tick();
  const timer = setInterval(tick, config.refreshMinutes * 60_000);
  timer.unref();
  return {
    /** Whether the last round mapped every port. */
    get mapped() {
      return mapped;
    },
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await round;
      for (const p of ports) {
        try {
          await upnp.unmap(p.port, p.protocols);
        } catch (e) {
          log.warn({ err: (e as Error).message, port: p.port }, 'UPnP: removing an own mapping failed');
        }
      }
    },
  };
}
