/** The node API: a host serving the `node` manifests plus the host's own routes. */
import { Host, type HostOptions } from './host.ts';
import { hostPlugin } from './plugins/host-plugin.ts';

export function createNodeHost(opts: Omit<HostOptions, 'service' | 'builtins'>): Host {
  const host: Host = new Host({ ...opts, service: 'node', builtins: [hostPlugin(() => host)] });
  return host;
}
