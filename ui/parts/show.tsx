/** Small display helpers: a labelled value list, a part's error in its place, times and sizes. */
import type { ComponentChildren } from 'preact';
import type { Loaded } from '../live.ts';

export function Facts({ rows }: { rows: [string, ComponentChildren][] }) {
  return (
    <dl class="facts">
      {rows.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v}</dd>
        </div>
      ))}
    </dl>
  );
}

/** The data of a read, or why it is missing ("loading", or the node's error) in its place. */
export function Part<T>({ of, children }: { of: Loaded<T>; children: (d: T) => ComponentChildren }) {
  if (of.data !== undefined) return <>{children(of.data)}</>;
  if (of.error) return <p class="bad">Not available: {of.error.message}</p>;
  return <p class="muted">Loading…</p>;
}

export function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '–';
  const d = Math.floor(seconds / 86400);
  const h = Math.floor((seconds % 86400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  return d ? `${d} d ${h} h` : h ? `${h} h ${m} min` : `${m} min ${Math.floor(seconds % 60)} s`;
}

export const text = (v: unknown): string => (v === null || v === undefined ? '–' : typeof v === 'object' ? JSON.stringify(v) : String(v));

export function Section({ title, children, id }: { title: string; id: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby={id} class="card">
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}
