/**
 * The ports this node and the services beside it listen on, so that nothing the node runs for others (an
 * app's published port) can take one of them. The host claims its API port and the neighbours the
 * reference keeps with it (api-1 the home UI, api+1 TLS, api+2 file-sync peers, api+3 the UPnP test
 * port) and the operator's `reservedPorts` (services of this machine outside this process, such as the
 * deployment trigger); each plugin claims the ports its own services use (the file-sync GUI and sync
 * ports, the daemons' RPC and P2P ports) when it is set up and drops them when disposed.
 */
import type { OwnPort, OwnPorts } from '../plugin-api.ts';

export class OwnPortsRegistry implements OwnPorts {
  private readonly claims = new Map<symbol, OwnPort[]>();

  /**
   * `apiPort`: the API listener's port, asked when a port is looked up (a listener on port 0 learns its
   * port only when it listens); `httpsPort`: where the node serves HTTPS (`api.tls.port`, 0 when none), which
   * may be another port than API + 1.
   */
  constructor(
    private readonly apiPort: () => number,
    private readonly reserved: readonly OwnPort[],
    private readonly httpsPort: () => number = () => 0,
  ) {}

  claim(what: string, ports: number[]): () => void {
    const key = Symbol(what);
    this.claims.set(
      key,
      ports.filter((p) => Number.isInteger(p) && p > 0 && p <= 65535).map((port) => ({ port, what })),
    );
    return () => void this.claims.delete(key);
  }

  list(): OwnPort[] {
    const api = this.apiPort();
    const host: OwnPort[] = api > 0
      ? [
          { port: api - 1, what: 'the node home UI (API port - 1)' },
          { port: api, what: 'the node API' },
          { port: api + 1, what: 'the node API over TLS (API port + 1)' },
          { port: api + 2, what: 'the file-sync peers (API port + 2)' },
          { port: api + 3, what: 'the UPnP test port (API port + 3)' },
        ]
      : [];
    const tls = this.httpsPort();
    if (tls > 0 && !host.some((p) => p.port === tls)) host.push({ port: tls, what: 'the node API over TLS (api.tls.port)' });
    return [...host, ...this.reserved, ...[...this.claims.values()].flat()];
  }

  whose(port: number): string | undefined {
    return this.list().find((p) => p.port === port)?.what;
  }
}
