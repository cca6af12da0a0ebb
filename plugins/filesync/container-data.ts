/** The sync mode of a component's primary `containerData` entry: `r:` replicated, `g:` primary/standby. */
export type SyncMode = 'r' | 'g' | null;

export function syncMode(containerData: string): SyncMode {
  const primary = (containerData ?? '').split('|')[0].trim();
  const m = /^([a-z]+):\//.exec(primary);
  if (!m) return null;
  // `g` wins over `r` when both are given: one running instance is the stricter promise.
  if (m[1].includes('g')) return 'g';
  if (m[1].includes('r')) return 'r';
  return null;
}
