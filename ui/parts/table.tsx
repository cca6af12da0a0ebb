/**
 * A data table: its header row from `columns`, rows as children, in a region that scrolls sideways on a
 * narrow screen and is reachable by keyboard (axe: scrollable-region-focusable).
 */
import type { ComponentChildren } from 'preact';

export function Table({ label, columns, words, children }: { label: string; columns: string[]; words?: boolean; children: ComponentChildren }) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${label}, scrolls sideways`}>
      <table class={words ? 'words' : undefined} aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
