/**
 * `npm run corectl -- <command>`: operator and vendor tool. It reads the node's config (CORENODE_CONFIG,
 * config/node.yaml, env overrides) to find the data, manifests and plugins folders. Plugin switches are
 * written to `<dataDir>/plugins.json`, which a running node watches and applies at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { loadConfig, type NodeConfig } from '../config.ts';
import { builtManifestCache } from '../manifest/cache.ts';
import { diffManifests } from '../manifest/diff.ts';
import { BUILTIN_PLUGINS, checkFiles, checkPluginData, manifestFiles } from '../manifest/set.ts';
import type { Manifest } from '../manifest/parse.ts';
import { PluginState, readState, writeState } from '../plugins/state.ts';
import { pluginEntry } from '../paths.ts';

const USAGE = `usage: npm run corectl -- <command>

  plugins list                       each plugin, whether it is enabled, and why
  plugins enable <id>                enable a plugin (a running node applies it at once)
  plugins disable <id>               disable a plugin; its routes answer an error naming it
  manifests validate [file|dir ...]  check manifests before they ship (default: the node's manifests folder)
  manifests diff <dir | file ...>    what installing these manifests would change on this node
  manifests routes [file|dir ...]    the route table: method, path, level, plugin, handler
  help                               this text

Options: --json (list, routes, diff) prints JSON. The node's config is read as \`npm start\` reads it.`;

class UsageError extends Error {}

function out(line = ''): void {
  process.stdout.write(line + '\n');
}

function table(rows: string[][]): void {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) out(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ').trimEnd());
}

/**
 * Every manifest of the node's folder that parses (a broken one is listed by `validate`, not here). Read as
 * the node reads them: a manifest the build checked comes from its cache, its route schemas not compiled
 * (1.1 s of CPU for `plugins list` otherwise, most of it compiling schemas that listing never uses).
 * `validate` and the proposed side of `diff` check everything in full.
 */
function currentManifests(config: NodeConfig, files = manifestFiles([config.manifestsDir])): Manifest[] {
  return checkFiles(files, config.pluginsDir, builtManifestCache()).manifests;
}

/**
 * The node's plugins: built in, named by a manifest of the node's listener (`listener:` in the config, `api`
 * by default), or a plugin folder with no manifest yet. A plugin whose manifests all bind another listener
 * (the deployment trigger, its own process) is not one: the node never serves its routes.
 */
function knownPlugins(config: NodeConfig, manifests: Manifest[]): string[] {
  const elsewhere = new Set(manifests.filter((m) => m.listener !== config.listener).map((m) => m.plugin));
  const mine = manifests.filter((m) => m.listener === config.listener).map((m) => m.plugin);
  const dirs = fs.existsSync(config.pluginsDir)
    ? fs.readdirSync(config.pluginsDir).filter((d) => fs.existsSync(pluginEntry(config.pluginsDir, d)) && !elsewhere.has(d))
    : [];
  return [...new Set([...BUILTIN_PLUGINS, ...mine, ...dirs])].sort();
}

function stateFile(config: NodeConfig): string {
  return path.join(config.dataDir, 'plugins.json');
}

function pluginsList(config: NodeConfig, json: boolean): number {
  const manifests = currentManifests(config);
  const state = new PluginState(stateFile(config), config.plugins);
  const rows = knownPlugins(config, manifests).map((id) => {
    const m = manifests.find((x) => x.plugin === id && x.listener === config.listener);
    const builtin = BUILTIN_PLUGINS.includes(id);
    return {
      plugin: id,
      enabled: builtin || state.enabled(id),
      source: builtin ? 'built in' : state.sourceOf(id),
      manifest: m ? path.basename(m.file) : '-',
      routes: m?.routes.length ?? 0,
    };
  });
  if (json) out(JSON.stringify(rows, null, 2));
  else table([['PLUGIN', 'STATE', 'SET BY', 'MANIFEST', 'ROUTES'], ...rows.map((r) => [r.plugin, r.enabled ? 'enabled' : 'disabled', r.source, r.manifest, String(r.routes)])]);
  return 0;
}

function pluginsSet(config: NodeConfig, id: string | undefined, enabled: boolean): number {
  if (!id) throw new UsageError(`plugins ${enabled ? 'enable' : 'disable'} needs a plugin id`);
  const manifests = currentManifests(config);
  const known = knownPlugins(config, manifests);
  const other = manifests.find((m) => m.plugin === id && m.listener !== config.listener);
  if (!known.includes(id) && other) {
    process.stderr.write(`corectl: the ${id} plugin serves the ${other.listener} listener, another process than this node's ${config.listener}\n`);
    return 1;
  }
  if (!known.includes(id)) {
    process.stderr.write(`corectl: unknown plugin '${id}' (known: ${known.join(', ')})\n`);
    return 1;
  }
  if (BUILTIN_PLUGINS.includes(id)) {
    process.stderr.write(`corectl: the ${id} plugin is part of the host and cannot be ${enabled ? 'enabled' : 'disabled'}\n`);
    return 1;
  }
  const file = stateFile(config);
  writeState(file, { ...readState(file), [id]: enabled });
  out(`${id} ${enabled ? 'enabled' : 'disabled'} (written to ${file}; a running node applies it at once)`);
  if (config.plugins[id] !== undefined && config.plugins[id] !== enabled)
    out(`note: ${config.source} says plugins.${id}: ${config.plugins[id]}; the state file takes precedence`);
  return 0;
}

async function validate(config: NodeConfig, paths: string[]): Promise<number> {
  const files = manifestFiles(paths.length ? paths : [config.manifestsDir]);
  if (!files.length) {
    process.stderr.write(`corectl: no manifest files in ${paths.join(' ') || config.manifestsDir}\n`);
    return 1;
  }
  const { manifests, errors } = checkFiles(files, config.pluginsDir);
  // Each route's `x` block against its plugin's routeData (imports the plugins, runs no setup).
  errors.push(...(await checkPluginData(manifests, config.pluginsDir)));
  for (const e of errors) process.stderr.write(`${e}\n`);
  if (errors.length) {
    process.stderr.write(`corectl: ${errors.length} error(s) in ${files.length} file(s)\n`);
    return 1;
  }
  out(`ok: ${manifests.length} manifest(s), ${manifests.reduce((n, m) => n + m.routes.length, 0)} route(s)`);
  return 0;
}

async function diff(config: NodeConfig, paths: string[], json: boolean): Promise<number> {
  if (!paths.length) throw new UsageError('manifests diff needs a folder or manifest files');
  const currentFiles = manifestFiles([config.manifestsDir]);
  // A folder is a whole new set; files replace (or add) the same-named files of the current folder.
  const isDir = paths.length === 1 && fs.existsSync(paths[0]) && fs.statSync(paths[0]).isDirectory();
  let proposedFiles: string[];
  if (isDir) proposedFiles = manifestFiles(paths);
  else {
    const byName = new Map(currentFiles.map((f) => [path.basename(f), f]));
    for (const f of paths) byName.set(path.basename(f), f);
    proposedFiles = [...byName.values()];
  }
  const proposed = checkFiles(proposedFiles, config.pluginsDir);
  proposed.errors.push(...(await checkPluginData(proposed.manifests, config.pluginsDir)));
  if (proposed.errors.length) {
    for (const e of proposed.errors) process.stderr.write(`${e}\n`);
    process.stderr.write('corectl: the proposed manifests are invalid; a running node would keep its current routes\n');
    return 1;
  }
  const current = currentManifests(config, currentFiles);
  const changes = diffManifests(current, proposed.manifests);
  if (json) {
    out(JSON.stringify(changes.map(({ id, kind, fields }) => ({ id, kind, fields })), null, 2));
    return 0;
  }
  if (!changes.length) {
    out('no route changes');
    return 0;
  }
  for (const c of changes) {
    const r = c.route;
    if (c.kind === 'added') out(`+ ${c.id}  ${r.method} ${r.path}  level ${r.level}${r.handler ? `  handler ${r.handler}` : ''}`);
    else if (c.kind === 'removed') out(`- ${c.id}  ${r.method} ${r.path}  (no longer routed)`);
    else {
      out(`~ ${c.id}  ${r.method} ${r.path}`);
      for (const f of c.fields) out(`    ${f.field}: ${f.from} -> ${f.to}`);
    }
  }
  const n = (k: string) => changes.filter((c) => c.kind === k).length;
  out(`${n('added')} added, ${n('removed')} removed, ${n('changed')} changed`);
  return 0;
}

function routes(config: NodeConfig, paths: string[], json: boolean): number {
  const { manifests, errors } = checkFiles(manifestFiles(paths.length ? paths : [config.manifestsDir]), config.pluginsDir, builtManifestCache());
  for (const e of errors) process.stderr.write(`${e}\n`);
  const rows = manifests
    .flatMap((m) => m.routes)
    .flatMap((r) => [r.path, ...r.aliases].map((p, i) => ({ r, p, alias: i > 0 })))
    .sort((a, b) => a.p.localeCompare(b.p) || a.r.method.localeCompare(b.r.method));
  if (json) {
    out(JSON.stringify(rows.map(({ r, p, alias }) => ({ id: r.id, method: r.method, path: p, level: r.level, plugin: r.plugin, handler: r.handler ?? null, listener: r.listener, alias })), null, 2));
  } else {
    const flags = (r: (typeof rows)[number]['r'], alias: boolean) =>
      [alias && 'alias', r.removed && 'removed', r.httpsOnly && 'https', r.gate && `gate:${r.gate}`, r.operation && 'operation', r.deprecated && 'deprecated', r.listener !== 'api' && `listener:${r.listener}`]
        .filter(Boolean)
        .join(',');
    table([['METHOD', 'PATH', 'LEVEL', 'PLUGIN', 'HANDLER', 'FLAGS'], ...rows.map(({ r, p, alias }) => [r.method, p, r.level, r.plugin, r.handler ?? '-', flags(r, alias)])]);
  }
  return errors.length ? 1 : 0;
}

export function main(argv: string[]): number | Promise<number> {
  const json = argv.includes('--json');
  const args = argv.filter((a) => a !== '--json');
  const [group, cmd, ...rest] = args;
  if (!group || group === 'help' || group === '--help' || group === '-h') {
    out(USAGE);
    return group ? 0 : 2;
  }
  const config = loadConfig();
  if (group === 'plugins' && cmd === 'list') return pluginsList(config, json);
  if (group === 'plugins' && cmd === 'enable') return pluginsSet(config, rest[0], true);
  if (group === 'plugins' && cmd === 'disable') return pluginsSet(config, rest[0], false);
  if (group === 'manifests' && cmd === 'validate') return validate(config, rest);
  if (group === 'manifests' && cmd === 'diff') return diff(config, rest, json);
  if (group === 'manifests' && cmd === 'routes') return routes(config, rest, json);
  throw new UsageError(`unknown command: ${args.join(' ')}`);
}

try {
  // validate and diff import plugin definitions (ES modules), so they answer asynchronously.
  Promise.resolve(main(process.argv.slice(2))).then(
    (code) => void (process.exitCode = code),
    (e) => fail(e),
  );
} catch (e) {
  fail(e);
}

function fail(e: unknown): void {
  process.stderr.write(`corectl: ${(e as Error).message}\n`);
  if (e instanceof UsageError) process.stderr.write(`\n${USAGE}\n`);
  process.exitCode = e instanceof UsageError ? 2 : 1;
}
