/**
 * The node's geolocation from the configured providers, tried in order, each answering the ip-api.com JSON
 * shape (`status, query|ip, continent, continentCode, country, countryCode, region, regionName, lat, lon,
 * org, hosting`). A good answer is cached for `cacheSeconds`; a failure is not cached, so the next call
 * tries again.
 */
import { ApiError, type Clock } from '../../core/plugin-api.ts';
import type { NodeConfig } from './settings.ts';

export interface Geolocation {
  ip: string;
  continent: string;
  continentCode: string;
  country: string;
  countryCode: string;
  region: string;
  regionName: string;
  lat: number;
  lon: number;
  org: string;
  static: boolean;
  dataCenter: boolean;
}

const str = (v: unknown) => (typeof v === 'string' ? v.slice(0, 200) : '');
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export function createGeolocator(config: NodeConfig, clock: Clock) {
  let cached: { at: number; value: Geolocation } | null = null;
  let inFlight: Promise<Geolocation> | null = null;

  function normalise(d: Record<string, unknown>): Geolocation {
    const org = str(d.org) || str(d.isp);
    const lower = org.toLowerCase();
    return {
      ip: str(d.query) || str(d.ip),
      continent: str(d.continent),
      continentCode: str(d.continentCode),
      country: str(d.country),
      countryCode: str(d.countryCode),
      region: str(d.region),
      regionName: str(d.regionName),
      lat: num(d.lat),
      lon: num(d.lon),
      org,
      static: config.staticIpOrgs.some((o) => lower.includes(o.toLowerCase())),
      dataCenter: d.hosting === true,
    };
  }

  async function ask(): Promise<Geolocation> {
    const failures: string[] = [];
    for (const url of config.geolocation.providers) {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(config.geolocation.timeoutMs), redirect: 'error' });
        if (!res.ok) throw new Error(`HTTP ${res.status}`);
        const text = await res.text();
        if (text.length > 64 * 1024) throw new Error('answer too large');
        const d = JSON.parse(text) as Record<string, unknown>;
        if (!d || typeof d !== 'object' || (d.status !== undefined && d.status !== 'success')) throw new Error(`status ${String(d?.status).slice(0, 40)}`);
        const g = normalise(d);
        if (!g.ip) throw new Error('no ip in the answer');
        return g;
      } catch (e) {
        failures.push(`${new URL(url).host}: ${(e as Error).message}`);
      }
    }
    if (!config.geolocation.providers.length) throw new ApiError(503, 'GeolocationUnavailable', 'No geolocation provider is configured (node.geolocation.providers)');
    throw new ApiError(503, 'GeolocationUnavailable', `No geolocation provider answered: ${failures.join('; ')}`);
  }

  return {
    async get(): Promise<Geolocation> {
      if (cached && clock.now() - cached.at < config.geolocation.cacheSeconds * 1000) return cached.value;
      // Concurrent callers share one lookup: a burst of /core/geolocation is one provider call.
      inFlight ??= ask()
        .then((value) => ((cached = { at: clock.now(), value }), value))
        .finally(() => (inFlight = null));
      return inFlight;
    },
  };
}
