/**
 * When placement has settled for an app: exactly `count` nodes run it by their own listings (the census),
 * every running node lists those very nodes as its locations, and none lists an install of it in progress.
 * The census alone can show the right count while a node still plans from an older view (one more install
 * announced, a surplus not yet trimmed); the views agreeing says the count will stay. Shared by
 * test/network/placement.test.ts and `npm run bench:placement`.
 */
import { locationsOn } from './app-census.ts';
import type { CensusTimeline, Seen } from './census-timeline.ts';
import { eventually } from '../wait.ts';
import type { Testbed, TestbedNode } from './index.ts';

const data = (a: { json?: any; status: number; text: string }) => {
  if (a.json?.status !== 'success') throw new Error(`not a success: ${a.status} ${a.text.slice(0, 300)}`);
  return a.json.data;
};

async function viewsAgree(tb: Testbed, app: string, who: string[]): Promise<boolean> {
  const live = tb.nodes.filter((n) => n.running());
  const want = JSON.stringify(who.map((w) => tb.node(w).listedAddress).sort());
  const [locations, installing] = await Promise.all([
    Promise.all(live.map((n) => locationsOn(n, app))),
    Promise.all(live.map(async (n) => (data(await n.get(`/apps/installinglocation/${app}`)) as unknown[]).length)),
  ]);
  return locations.every((l) => JSON.stringify(l) === want) && installing.every((l) => l === 0);
}

/** The first moment at or after `since` when the app settled on `count` nodes; fails after `timeoutMs`. */
export async function settled(tb: Testbed, census: CensusTimeline, app: string, count: number, o: { since: number; timeoutMs: number; what: string }): Promise<Seen> {
  const end = o.since + o.timeoutMs;
  let since = o.since;
  for (;;) {
    const seen = await census.until(app, (c) => c.running.length === count && c.installed.length === count && c.silent.length === 0, { since, timeoutMs: Math.max(0, end - since), what: o.what });
    if (await viewsAgree(tb, app, seen.census.running)) return seen;
    if (Date.now() > end) throw new Error(`gave up waiting for ${o.what}: ${JSON.stringify(seen.census)}, but the nodes' views of it differ`);
    since = Date.now();
  }
}

/**
 * Every node holds the network policy and plans: its loop has had peers for `apps.placement.warmupMs`
 * (`GET /apps/placement` shows a round without a `waiting` reason). A payment made before that would time
 * the warm-up, not placement.
 */
export async function everyNodePlanning(tb: Testbed, admin: (n: TestbedNode) => Promise<Record<string, string>>, timeoutMs = 90_000): Promise<void> {
  const planning = async (n: TestbedNode) => {
    const p = (await n.get('/apps/placement', await admin(n))).json?.data;
    return (await n.get('/apps/networkpolicy')).json?.data?.held === true && p?.last?.network === true && p.last.at > 0 && !p.last.waiting;
  };
  await eventually(async () => (await Promise.all(tb.nodes.filter((n) => n.running()).map(planning))).every(Boolean), { what: 'every node planning', everyMs: 500, timeoutMs });
}
