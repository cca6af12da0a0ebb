/** The test client of a testbed node: HTTP, or HTTPS trusting the testbed's own certificate. */
import { clientAt, httpsClientAt, type Client } from '../node.ts';

export function clientFor(url: string, ca?: string): Client {
  return url.startsWith('https:') ? httpsClientAt(url, ca) : clientAt(url);
}
