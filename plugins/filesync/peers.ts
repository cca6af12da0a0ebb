/**
 * Talking to the other nodes of an app over their public node API: their Syncthing device id
 * (`GET /filesync/deviceid`) and what their folders hold (`POST /apps/promotedfolders`). A location's
 * address is `ip` or `ip:apiport`; its Syncthing listens on the API port + 2.
 *
 * `scheme`: `auto` reaches each node over HTTPS where it offers it, else plain HTTP (lib/node-http, which
 * accepts the self-signed certificates nodes use); `http` and `https` use that scheme only, `https` with
 * the certificate checked against the system's CAs (a network whose nodes have CA-issued certificates: the
 * device id answer decides who receives the app's data, and only a checked certificate authenticates it).
 */
import { callNode } from '../../lib/node-http/request.ts';
import type { FolderReport } from './follower.ts';

export interface PeerLink {
  deviceId(address: string): Promise<string>;
  promoted(address: string, app: string): Promise<FolderReport[]>;
  syncthingAddress(address: string): string;
}

export function peerLink(o: { scheme: 'auto' | 'http' | 'https'; defaultApiPort: number; timeoutMs: number }): PeerLink {
  const split = (address: string) => {
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(address);
    if (!m) throw new Error(`bad peer address ${address}`);
    return { host: m[1], port: m[2] ? Number(m[2]) : o.defaultApiPort };
  };
  /** The answer's text of one call to the node at `address`. */
  const call = async (address: string, path: string, post?: string): Promise<string> => {
    const { host, port } = split(address);
    const headers = post === undefined ? undefined : { 'content-type': 'text/plain' };
    if (o.scheme === 'auto')
      return (await callNode(host, port, path, { method: post === undefined ? 'GET' : 'POST', body: post, headers, timeoutMs: o.timeoutMs, maxBytes: 4 << 20 })).text;
    const res = await fetch(`${o.scheme}://${host}:${port}${path}`, { method: post === undefined ? 'GET' : 'POST', body: post, headers, signal: AbortSignal.timeout(o.timeoutMs) });
    return res.text();
  };
  const ids = new Map<string, { id: string; at: number }>();
  const envelope = (text: string) => {
    const j = JSON.parse(text) as { status?: string; data?: any };
    if (j?.status !== 'success') throw new Error(j?.data?.message ?? 'error answer');
    return j.data;
  };
  return {
    async deviceId(address) {
      const c = ids.get(address);
      if (c && Date.now() - c.at < 60_000) return c.id;
      const id = envelope(await call(address, '/filesync/deviceid'));
      if (typeof id !== 'string' || !/^[A-Z2-7]{7}(-[A-Z2-7]{7}){7}$/.test(id)) throw new Error(`${address} answered no device id`);
      ids.set(address, { id, at: Date.now() });
      return id;
    },
    async promoted(address, app) {
      const data = envelope(await call(address, '/apps/promotedfolders', JSON.stringify({ appname: app })));
      return Array.isArray(data) ? (data as FolderReport[]) : [];
    },
    syncthingAddress(address) {
      const { host, port } = split(address);
      return `tcp://${host}:${port + 2}`;
    },
  };
}
