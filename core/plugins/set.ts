/**
 * The plugins of one host: their definitions (imported once), their running instances, and the services
 * they provide each other. Setting up and retiring are separate steps so a reload can set up what a new
 * route table needs, bind it, and only then retire what the old table used: a failed reload disposes only
 * what it set up itself and leaves the running plugins as they were.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import type { Manifest } from '../manifest/parse.ts';
import type { PluginDefinition, PluginInstance, ServiceRef } from '../plugin-api.ts';
import type { PluginState } from './state.ts';
import { fromEnvText, type NodeConfig } from '../config.ts';
import { describeError } from '../manifest/schema.ts';
import { validatorFor } from '../built-validators.ts';
import { pluginEntry } from '../paths.ts';
import { checkRouteData } from '../manifest/route-data.ts';

export interface Retired {
  id: string;
  instance: PluginInstance;
}

interface Entry {
  def: PluginDefinition;
  instance?: PluginInstance;
  /** The validated config section the running instance was set up with. */
  config?: Record<string, unknown>;
  /** Why an enabled plugin is not running (a service it requires is missing). */
  unavailable?: string;
}

export interface PluginSetOptions {
  pluginsDir: string;
  state: PluginState;
  log: Logger;
  /** A host service (`core.*` ref) as plugin `def` receives it (its own log child, its own stores). */
  coreService(def: PluginDefinition, ref: ServiceRef<unknown>): unknown;
  /** The plugin's config section, validated (throws naming the key or env variable). */
  config(def: PluginDefinition): unknown;
  /** Plugins operators may not disable (the host's own routes). */
  alwaysOn?: string[];
}

export class PluginSet {
  private readonly entries = new Map<string, Entry>();
  private readonly provided = new Map<string, { provider: string; impl: unknown }>();

  constructor(builtins: PluginDefinition[], private readonly opts: PluginSetOptions) {
    for (const def of builtins) this.entries.set(def.id, { def });
  }

  enabled(id: string): boolean {
    return (this.opts.alwaysOn ?? []).includes(id) || this.opts.state.enabled(id);
  }

  /** Null when the plugin serves; otherwise the message its routes answer. */
  refusal(id: string): string | null {
    const e = this.entries.get(id);
    if (e?.instance && this.enabled(id)) return null;
    if (!this.enabled(id)) return `The ${id} plugin is disabled on this node; its operator can enable it with corectl`;
    if (e?.unavailable) return `The ${id} plugin is not running: ${e.unavailable}`;
    return `The ${id} plugin is not running on this node`;
  }

  instance(id: string): PluginInstance | undefined {
    return this.entries.get(id)?.instance;
  }

  configOf(id: string): Record<string, unknown> | undefined {
    const e = this.entries.get(id);
    return e?.instance ? e.config : undefined;
  }

  /** Import the definition of every plugin a manifest names (module code loads once per process). */
  async importFor(manifests: Manifest[]): Promise<void> {
    for (const m of manifests) {
      if (this.entries.has(m.plugin)) continue;
      const file = pluginEntry(this.opts.pluginsDir, m.plugin);
      if (!fs.existsSync(file)) throw new Error(`${m.source}: no plugin ${m.plugin} (expected ${file})`);
      let mod: { default?: unknown };
      try {
        mod = await import(pathToFileURL(file).href);
      } catch (e) {
        throw new Error(`${m.source}: plugin ${m.plugin} could not be loaded from ${file}: ${(e as Error).message}`);
      }
      const def = mod.default as PluginDefinition;
      if (!def || typeof def.setup !== 'function' || def.id !== m.plugin)
        throw new Error(`${file}: the default export must be definePlugin({ id: '${m.plugin}', ... })`);
      this.entries.set(m.plugin, { def });
    }
    // Each route's `x` block against its plugin's routeData schema: a bad block fails the set here.
    for (const m of manifests) {
      const bad = checkRouteData(m, this.entries.get(m.plugin)!.def);
      if (bad.length) throw new Error(bad.join('\n'));
    }
  }

  /**
   * Set up the referenced, enabled plugins that are not running, providers before the plugins that
   * require them. A plugin whose required service no enabled plugin provides is left out (its routes say
   * why). Returns the ids set up, so a failed reload can take them down again.
   */
  async setUp(referenced: Set<string>): Promise<string[]> {
    const created: string[] = [];
    let pending = [...referenced].filter((id) => this.enabled(id) && !this.entries.get(id)!.instance);
    for (const id of pending) this.entries.get(id)!.unavailable = undefined;
    try {
      while (pending.length) {
        const ready = pending.filter((id) => this.missing(id).length === 0);
        if (!ready.length) break;
        for (const id of ready) {
          const e = this.entries.get(id)!;
          const context = this.contextFor(e.def); // a bad config section throws as it is
          e.config = context.config as Record<string, unknown>;
          try {
            e.instance = await e.def.setup(context as never);
          } catch (err) {
            throw new Error(`${(err as Error).message} (plugin ${id} failed to set up)`);
          }
          for (const [key, ref] of Object.entries(e.def.provides ?? {})) {
            const impl = (e.instance!.services as Record<string, unknown> | undefined)?.[key];
            if (impl === undefined) throw new Error(`plugin ${id} declares it provides ${(ref as ServiceRef<unknown>).id} but its setup returned no services.${key}`);
            this.provided.set((ref as ServiceRef<unknown>).id, { provider: id, impl });
          }
          created.push(id);
          this.opts.log.info({ plugin: id, version: e.def.version }, 'plugin set up');
        }
        pending = pending.filter((id) => !ready.includes(id));
      }
    } catch (err) {
      await this.dispose(created);
      throw err;
    }
    for (const id of pending) {
      const reason = `it requires service(s) ${this.missing(id).join(', ')}, which no enabled plugin provides`;
      this.entries.get(id)!.unavailable = reason;
      this.opts.log.warn({ plugin: id }, `plugin not set up: ${reason}`);
    }
    return created;
  }

  /**
   * Take out of service the running plugins that must stop: disabled, no longer referenced, or requiring
   * a service whose provider stops. Their routes refuse at once; pass the result to disposeRetired() once
   * the requests that started on the old routes have drained.
   */
  retire(referenced: Set<string>): Retired[] {
    const out: Retired[] = [];
    const stop = (id: string, reason?: string) => {
      const e = this.entries.get(id)!;
      out.push({ id, instance: e.instance! });
      e.instance = undefined;
      e.unavailable = reason;
      for (const [name, p] of this.provided) if (p.provider === id) this.provided.delete(name);
    };
    for (const [id, e] of this.entries) if (e.instance && (!this.enabled(id) || !referenced.has(id))) stop(id);
    for (let again = true; again; ) {
      again = false;
      for (const [id, e] of this.entries) {
        const missing = e.instance ? this.missing(id) : [];
        if (missing.length) {
          stop(id, `it requires service(s) ${missing.join(', ')}, which no enabled plugin provides`);
          again = true;
        }
      }
    }
    return out;
  }

  async disposeRetired(list: Retired[]): Promise<void> {
    for (const { id, instance } of list) {
      try {
        await instance.dispose?.();
        this.opts.log.info({ plugin: id }, 'plugin disposed');
      } catch (err) {
        this.opts.log.error({ err, plugin: id }, 'plugin dispose failed');
      }
    }
  }

  /** Take down plugins set up by a reload that then failed. */
  async dispose(ids: string[]): Promise<void> {
    const list: Retired[] = [];
    for (const id of ids) {
      const e = this.entries.get(id)!;
      if (e.instance) list.push({ id, instance: e.instance });
      e.instance = undefined;
      for (const [name, p] of this.provided) if (p.provider === id) this.provided.delete(name);
    }
    await this.disposeRetired(list);
  }

  /** Stop everything (host shutdown). */
  async disposeAll(): Promise<void> {
    await this.dispose([...this.entries].filter(([, e]) => e.instance).map(([id]) => id));
  }

  /** The other plugins' services this plugin names in `deps` that no running plugin provides. */
  private missing(id: string): string[] {
    return pluginDeps(this.entries.get(id)!.def).filter((s) => !this.provided.has(s));
  }

  /** Exactly what the plugin declared: its id, its config section, and each dep under the name it chose. */
  private contextFor(def: PluginDefinition): Record<string, unknown> {
    const ctx: Record<string, unknown> = { id: def.id, config: this.opts.config(def) };
    for (const [name, ref] of Object.entries((def.deps ?? {}) as Record<string, ServiceRef<unknown> & { optional?: true }>)) {
      if (ref.optional) ctx[name] = () => this.provided.get(ref.id)?.impl;
      else ctx[name] = isCoreRef(ref) ? this.opts.coreService(def, ref) : this.provided.get(ref.id)!.impl;
    }
    return ctx;
  }
}

const isCoreRef = (ref: ServiceRef<unknown>) => ref.id.startsWith('core.');

/** The ids of other plugins' services a definition depends on (it is set up after their providers). */
export function pluginDeps(def: PluginDefinition): string[] {
  return Object.values((def.deps ?? {}) as Record<string, ServiceRef<unknown> & { optional?: true }>)
    .filter((ref) => !isCoreRef(ref) && !ref.optional)
    .map((ref) => ref.id);
}

/**
 * A plugin's config section, validated by its configSchema with defaults filled in. Environment variables
 * the plugin binds (`env`) override the file; an error about a bound key names the variable
 * (`APP_PORT: must be <= 65535`), any other names the file and the key.
 */
export function validatePluginConfig(def: PluginDefinition, config: NodeConfig, env: NodeJS.ProcessEnv = process.env): unknown {
  const section = structuredClone((config[def.id] as Record<string, unknown> | undefined) ?? {});
  const bound = Object.entries(def.env ?? {});
  const props = ((def.configSchema as { properties?: Record<string, { type?: string }> } | undefined)?.properties ?? {});
  for (const [name, key] of bound) {
    const v = env[name];
    // Unset or empty keeps the file's value or the default.
    if (v !== undefined && v !== '') section[key] = fromEnvText(name, props[key]?.type, v);
  }
  if (def.configSchema) {
    const v = validatorFor('config', def.configSchema);
    if (!v(section)) {
      const { path, text } = describeError(def.id, v.errors![0]);
      const byEnv = bound.find(([, key]) => key === path[0]);
      throw new Error(byEnv ? text.replace(`${def.id}.${path[0]}`, byEnv[0]) : `${config.source}: ${text}`);
    }
  }
  return section;
}
