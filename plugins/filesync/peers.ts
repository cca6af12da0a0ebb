/**
 * Talking to the other nodes of an app over their public node API: their Syncthing device id
 * (`GET /filesync/deviceid`) and what their folders hold (`POST /apps/promotedfolders`). A location's
 * address is `ip` or `ip:apiport`; its Syncthing listens on the API port + 2.
 */
import type { FolderReport } from './follower.ts';

export interface PeerLink {
  deviceId(address: string): Promise<string>;
  promoted(address: string, app: string): Promise<FolderReport[]>;
  syncthingAddress(address: string): string;
}

export function peerLink(o: { scheme: string; defaultApiPort: number; timeoutMs: number }): PeerLink {
  const split = (address: string) => {
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(address);
    if (!m) throw new Error(`bad peer address ${address}`);
    return { host: m[1], port: m[2] ? Number(m[2]) : o.defaultApiPort };
  };
  const base = (address: string) => {
    const { host, port } = split(address);
    return `${o.scheme}://${host}:${port}`;
  };
  const ids = new Map<string, { id: string; at: number }>();
  const envelope = async (res: Response) => {
    const j = (await res.json()) as { status?: string; data?: any };
    if (j?.status !== 'success') throw new Error(j?.data?.message ?? 'error answer');
    return j.data;
  };
  return {
    async deviceId(address) {
      const c = ids.get(address);
      if (c && Date.now() - c.at < 60_000) return c.id;
      const id = await envelope(await fetch(`${base(address)}/filesync/deviceid`, { signal: AbortSignal.timeout(o.timeoutMs) }));
      if (typeof id !== 'string' || !/^[A-Z2-7]{7}(-[A-Z2-7]{7}){7}$/.test(id)) throw new Error(`${address} answered no device id`);
      ids.set(address, { id, at: Date.now() });
      return id;
    },
    async promoted(address, app) {
      const res = await fetch(`${base(address)}/apps/promotedfolders`, {
        method: 'POST',
        body: JSON.stringify({ appname: app }),
        headers: { 'content-type': 'text/plain' },
        signal: AbortSignal.timeout(o.timeoutMs),
      });
      const data = await envelope(res);
      return Array.isArray(data) ? (data as FolderReport[]) : [];
    },
    syncthingAddress(address) {
      const { host, port } = split(address);
      return `tcp://${host}:${port + 2}`;
    },
  };
}
