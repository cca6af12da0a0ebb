/**
 * A set of manifests checked as the host would load it, without running plugin code: each file against the
 * format, then the set (one manifest per plugin, a plugin folder for each, schemas that compile, no two
 * routes on one method and path). Used by `corectl manifests validate|diff|routes`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { bindRoute, type ChainServices } from '../http/chain.ts';
import { loadManifestFile, type Manifest, type ManifestLookup } from './parse.ts';
import { buildTable } from '../http/table.ts';
import { isManifestFile } from './watch.ts';
import { pluginEntry } from '../paths.ts';
import { checkRouteData } from './route-data.ts';
import { pathToFileURL } from 'node:url';
import type { PluginDefinition } from '../plugin-api.ts';

/** Plugins built into the host: they have manifests but no folder under plugins/. */
export const BUILTIN_PLUGINS = ['host'];

/** The manifest files named by `paths` (files, or folders whose *.yaml files count), in name order. */
export function manifestFiles(paths: string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    if (fs.existsSync(p) && fs.statSync(p).isDirectory())
      out.push(...fs.readdirSync(p).filter(isManifestFile).sort().map((f) => path.join(p, f)));
    else out.push(p);
  }
  return out;
}

export interface SetResult {
  manifests: Manifest[];
  /** One line per problem: `file:line:col: reason`. */
  errors: string[];
}

/**
 * Parse every file (each file's first error is reported; the others still parse), then check the set. With
 * `cache` (the build's, for reads that list routes), a manifest the build already checked is taken from it.
 */
export function checkFiles(files: string[], pluginsDir: string, cache?: ManifestLookup): SetResult {
  const manifests: Manifest[] = [];
  const errors: string[] = [];
  for (const f of files) {
    try {
      manifests.push(loadManifestFile(f, cache));
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  errors.push(...checkSet(manifests, pluginsDir));
  return { manifests, errors };
}

/**
 * The checks that need the plugins' definitions (imported, never set up): each route's `x` block against
 * its plugin's `routeData` schema. A plugin that cannot be imported is reported as the host would.
 */
export async function checkPluginData(manifests: Manifest[], pluginsDir: string, builtins: PluginDefinition[] = []): Promise<string[]> {
  const errors: string[] = [];
  for (const m of manifests) {
    let def: PluginDefinition | undefined = builtins.find((b) => b.id === m.plugin);
    const file = pluginEntry(pluginsDir, m.plugin);
    if (!def && BUILTIN_PLUGINS.includes(m.plugin)) def = { id: m.plugin } as PluginDefinition;
    if (!def) {
      if (!fs.existsSync(file)) continue; // checkSet names the missing folder
      try {
        def = ((await import(pathToFileURL(file).href)) as { default?: PluginDefinition }).default;
      } catch (e) {
        errors.push(`${m.source}: plugin ${m.plugin} could not be loaded from ${file}: ${(e as Error).message}`);
        continue;
      }
      if (!def || def.id !== m.plugin) {
        errors.push(`${file}: the default export must be definePlugin({ id: '${m.plugin}', ... })`);
        continue;
      }
    }
    errors.push(...checkRouteData(m, def));
  }
  return errors;
}

const NO_SERVICES = {} as ChainServices; // tables built here only to find conflicts; they never serve

export function checkSet(manifests: Manifest[], pluginsDir: string): string[] {
  const errors: string[] = [];
  const seen = new Map<string, Manifest>();
  for (const m of manifests) {
    const other = seen.get(`${m.listener}/${m.plugin}`);
    if (other) errors.push(`${m.source}: plugin ${m.plugin} already has a manifest (${other.file})`);
    seen.set(`${m.listener}/${m.plugin}`, m);
    const entry = pluginEntry(pluginsDir, m.plugin);
    if (!BUILTIN_PLUGINS.includes(m.plugin) && !fs.existsSync(entry)) errors.push(`${m.source}: no plugin ${m.plugin} (expected ${entry})`);
  }
  for (const listener of new Set(manifests.map((m) => m.listener))) {
    const mine = manifests.filter((m) => m.listener === listener);
    try {
      // A manifest from the build's cache proved its schemas compile: bound lazily, as the node binds it.
      buildTable(mine, mine.flatMap((m) => m.routes.map((r) => bindRoute(r, undefined, m.schemasChecked))), NO_SERVICES);
    } catch (e) {
      errors.push((e as Error).message);
    }
  }
  return errors;
}
