/**
 * Spec names -> the daemon's own method names: the one table that lets one daemon build or another be served.
 * The cloud's daemon keeps its older `legacynode` method names behind the spec's `corenode` routes (facts
 * §3.2); a name not listed is the same on both sides. Operators override entries with `daemon.methods`
 * (for example `getcorenodestatus: getfluxnodestatus` for a daemon build that renamed its calls).
 */
export const DAEMON_METHODS: Readonly<Record<string, string>> = Object.freeze({
  getcorenodestatus: 'getlegacynodestatus',
  listcorenodes: 'listcorenodes',
  viewdeterministiccorenodelist: 'viewdeterministiclegacynodelist',
  getcorenodecount: 'getlegacynodecount',
  corenodecurrentwinner: 'legacynodecurrentwinner',
  createcorenodekey: 'createlegacynodekey',
  listcorenodeconf: 'listlegacynodeconf',
  startbenchmark: 'startlegacybenchd',
  stopbenchmark: 'stoplegacybenchd',
});

export function methodTable(overrides: Record<string, string>): (specName: string) => string {
  const table = { ...DAEMON_METHODS, ...overrides };
  return (name) => table[name] ?? name;
}
