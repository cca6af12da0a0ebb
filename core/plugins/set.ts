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
import type { PluginContext, PluginDefinition, PluginInstance, ServiceRegistry } from '../plugin-api.ts';
import type { PluginState } from './state.ts';
import type { NodeConfig } from '../config.ts';
import { createAjv, describeError } from '../manifest/schema.ts';
import { pluginEntry } from '../paths.ts';

export interface Retired {
  id: string;
  instance: PluginInstance;
}

interface Entry {
  def: PluginDefinition;
  instance?: PluginInstance;
  /** Why an enabled plugin is not running (a service it requires is missing). */
  unavailable?: string;
}

export interface PluginSetOptions {
  pluginsDir: string;
  state: PluginState;
  log: Logger;
  /** Builds a plugin's setup context around the shared service registry. */
  context(def: PluginDefinition, services: ServiceRegistry): PluginContext;
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

  /** The services plugins provide each other, by name. */
  services(): Map<string, unknown> {
    return new Map([...this.provided].map(([name, p]) => [name, p.impl]));
  }

  ids(): string[] {
    return [...this.entries.keys()];
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
          const context = this.opts.context(e.def, this.registryFor(id)); // a bad config section throws as it is
          try {
            e.instance = await e.def.setup(context);
          } catch (err) {
            throw new Error(`${(err as Error).message} (plugin ${id} failed to set up)`);
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

  private missing(id: string): string[] {
    return (this.entries.get(id)!.def.requires ?? []).filter((s) => !this.provided.has(s));
  }

  private registryFor(id: string): ServiceRegistry {
    return {
      provide: (name, impl) => void this.provided.set(name, { provider: id, impl }),
      get: <T>(name: string) => {
        const p = this.provided.get(name);
        if (!p) throw new Error(`service ${name} is not provided`);
        return p.impl as T;
      },
      has: (name) => this.provided.has(name),
    };
  }
}

const configAjv = createAjv({ useDefaults: true });

/** A plugin's config section, validated by its configSchema with defaults filled in; throws naming the key. */
export function validatePluginConfig(def: PluginDefinition, config: NodeConfig): unknown {
  const section = structuredClone((config[def.id] as object | undefined) ?? {});
  if (def.configSchema) {
    const v = configAjv.compile(def.configSchema);
    if (!v(section)) throw new Error(`${config.source}: ${describeError(def.id, v.errors![0]).text}`);
  }
  return section;
}
