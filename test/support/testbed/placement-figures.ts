/**
 * The placement figures of issue 34 (time from a payment's confirmation to `instances` running, time from a
 * node's loss to its replacement, the largest number of instances at any moment, installs later trimmed),
 * read from what the testbed recorded: the census timeline (what the nodes answered, every second) and the
 * nodes' events (the installer's `apps.installing` at every install attempt, `apps.removed` at every
 * removal). Shared by test/network/placement.test.ts and `npm run bench:placement`.
 */
import type { CensusTimeline } from './census-timeline.ts';
import type { EventLog } from './event-log.ts';

export interface FigureRow {
  scenario: string;
  measure: string;
  value: string;
}

export class Figures {
  readonly rows: FigureRow[] = [];

  add(scenario: string, measure: string, value: string | number): void {
    this.rows.push({ scenario, measure, value: String(value) });
  }

  /** Seconds from `from` to `to`, one decimal. */
  static seconds(from: number, to: number): string {
    return `${((to - from) / 1000).toFixed(1)} s`;
  }

  /** A plain table, one row per figure. */
  table(): string {
    const head = { scenario: 'scenario', measure: 'measure', value: 'value' };
    const rows = [head, ...this.rows];
    const w = (k: keyof FigureRow) => Math.max(...rows.map((r) => r[k].length));
    const line = (r: FigureRow) => `| ${r.scenario.padEnd(w('scenario'))} | ${r.measure.padEnd(w('measure'))} | ${r.value.padEnd(w('value'))} |`;
    const rule = `|${'-'.repeat(w('scenario') + 2)}|${'-'.repeat(w('measure') + 2)}|${'-'.repeat(w('value') + 2)}|`;
    return [line(head), rule, ...this.rows.map(line)].join('\n');
  }
}

/**
 * Install attempts of `app`, per node, in [from, to]: the installer's own `apps.installing` (the placement
 * loop's announcements carry `placement: true` and are no attempt: nothing is pulled for them).
 */
export function installAttempts(log: EventLog, app: string, from = 0, to = Infinity): Map<string, number[]> {
  const by = new Map<string, number[]>();
  for (const e of log.named('apps.installing', app, from)) if (e.at <= to && e.data?.placement !== true) by.set(e.node, [...(by.get(e.node) ?? []), e.at]);
  return by;
}

/** Installs of `app` removed again in [from, to] (every `apps.removed` but an expiry): the wasted work. */
export function trimmed(log: EventLog, app: string, from = 0, to = Infinity): number {
  return log.named('apps.removed', app, from).filter((e) => e.at <= to && e.data?.reason !== 'expired').length;
}

/** The largest number of nodes running `app` at once in [from, to], from the census. */
export const largest = (t: CensusTimeline, app: string, from: number, to = Infinity) => t.maxRunning(app, from, to);
