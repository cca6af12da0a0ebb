/**
 * TEST-ONLY geolocation provider double: answers the ip-api.com JSON shape the node reads (no provider is
 * reachable from the test machine), counts its calls, and can be told to fail.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface GeolocationDouble {
  url: string;
  calls: number;
  answer: Record<string, unknown> | null;
  close(): Promise<void>;
}

export async function startGeolocationDouble(port = 0): Promise<GeolocationDouble> {
  const double: GeolocationDouble = {
    url: '',
    calls: 0,
    answer: {
      status: 'success',
      query: '203.0.113.7',
      continent: 'Europe',
      continentCode: 'EU',
      country: 'Germany',
      countryCode: 'DE',
      region: 'BY',
      regionName: 'Bavaria',
      lat: 49.45,
      lon: 11.07,
      org: 'Hetzner Online GmbH',
      hosting: true,
    },
    close: async () => {},
  };
  const server = http.createServer((_req, res) => {
    double.calls++;
    if (!double.answer) {
      res.statusCode = 502;
      return res.end('bad gateway');
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify(double.answer));
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  double.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/json`;
  double.close = () => new Promise((r) => (server.closeAllConnections(), server.close(() => r())));
  return double;
}
