/**
 * Spec names -> a daemon's own method names: the one table that lets one daemon build or another be served.
 * The cloud's daemons keep their older `legacynode` method names behind the spec's `corenode` routes (facts
 * §3.2, §3.3); a name not listed is the same on both sides. Operators override entries with `<plugin>.methods`.
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

export const BENCHMARK_METHODS: Readonly<Record<string, string>> = Object.freeze({
  signcorenodetransaction: 'signlegacynodetransaction',
});

export function methodTable(builtIn: Readonly<Record<string, string>>, overrides: Record<string, string> = {}): (specName: string) => string {
  const table = { ...builtIn, ...overrides };
  return (name) => table[name] ?? name;
}
