/**
 * Where apps run, counted from each node's own answers (`/apps/listrunningapps`: its dockerd's running
 * containers carrying an app's label; `/apps/installedapps`: its installed records), not from the
 * locations the nodes tell each other: the count under test is what the nodes did, and the locations are
 * what they said about it. A node whose process is not running, or that does not answer, is `silent`: its
 * containers may still run (a kill -9 of the node leaves its dockerd), but no node speaks for them.
 */
import type { TestbedNode } from './index.ts';

export interface Census {
  /** Nodes with a running container of the app. */
  running: string[];
  /** Nodes with the app installed (a `g:` app's standbys included: their containers are stopped). */
  installed: string[];
  silent: string[];
}

/** What every node answered at one moment: per node, the apps it runs and the apps it has installed. */
export interface Snapshot {
  at: number;
  nodes: Map<string, { running: Set<string>; installed: Set<string> } | null>;
}

interface Container {
  State: string;
  Labels?: Record<string, string>;
}

/** Two calls per node, whatever the number of apps. */
export async function snapshot(nodes: readonly TestbedNode[]): Promise<Snapshot> {
  const at = Date.now();
  const entries = await Promise.all(
    nodes.map(async (n) => {
      if (!n.running()) return [n.name, null] as const;
      const [ps, inst] = await Promise.all([n.get('/apps/listrunningapps').catch(() => null), n.get('/apps/installedapps').catch(() => null)]);
      if (ps?.json?.status !== 'success' || inst?.json?.status !== 'success') return [n.name, null] as const;
      const running = new Set((ps.json.data as Container[]).filter((x) => x.State === 'running').map((x) => x.Labels?.['corenode.app'] ?? ''));
      const installed = new Set((inst.json.data as { name: string }[]).map((a) => a.name));
      return [n.name, { running, installed }] as const;
    }),
  );
  return { at, nodes: new Map(entries) };
}

export function censusIn(s: Snapshot, app: string): Census {
  const c: Census = { running: [], installed: [], silent: [] };
  for (const [name, v] of s.nodes) {
    if (!v) c.silent.push(name);
    else {
      if (v.running.has(app)) c.running.push(name);
      if (v.installed.has(app)) c.installed.push(name);
    }
  }
  for (const l of [c.running, c.installed, c.silent]) l.sort();
  return c;
}

export async function censusOf(nodes: readonly TestbedNode[], app: string): Promise<Census> {
  return censusIn(await snapshot(nodes), app);
}

/** The `ip:port` of every location a node lists for the app (`/apps/location/<app>`), sorted. */
export async function locationsOn(n: TestbedNode, app: string): Promise<string[]> {
  const a = await n.get(`/apps/location/${app}`);
  if (a.json?.status !== 'success') throw new Error(`location of ${app} on ${n.name}: ${a.status} ${a.text.slice(0, 200)}`);
  return (a.json.data as { ip: string }[]).map((l) => l.ip).sort();
}
