/**
 * Which plugins are enabled on this node: the config's `plugins:` section, overridden by the state file
 * that `corectl plugins enable|disable` writes (`<dataDir>/plugins.json`), which a running host watches.
 */
import fs from 'node:fs';
import path from 'node:path';

export type StateSource = 'host' | 'state file' | 'config' | 'default';

export class PluginState {
  private fromFile: Record<string, boolean> = {};
  private inMemory: Record<string, boolean> = {};

  constructor(
    readonly file: string | null,
    private readonly fromConfig: Record<string, boolean>,
  ) {
    this.read();
  }

  enabled(id: string): boolean {
    return this.inMemory[id] ?? this.fromFile[id] ?? this.fromConfig[id] ?? true;
  }

  /** Where a plugin's state comes from, for `corectl plugins list`. */
  sourceOf(id: string): StateSource {
    if (id in this.inMemory) return 'host';
    if (id in this.fromFile) return 'state file';
    if (id in this.fromConfig) return 'config';
    return 'default';
  }

  /** The state file's entries. */
  fileEntries(): Record<string, boolean> {
    return { ...this.fromFile };
  }

  set(id: string, enabled: boolean): void {
    if (!this.file) {
      this.inMemory[id] = enabled;
      return;
    }
    this.read();
    this.fromFile[id] = enabled;
    writeState(this.file, this.fromFile);
  }

  /** Re-read the file; a broken file is ignored (the last good state stays). Returns whether it changed. */
  read(): boolean {
    if (!this.file) return false;
    let v: unknown;
    try {
      v = JSON.parse(fs.readFileSync(this.file, 'utf8'));
    } catch {
      return false; // missing or half-written: keep what we had
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) return false;
    const next = Object.fromEntries(Object.entries(v).filter(([, b]) => typeof b === 'boolean')) as Record<string, boolean>;
    const changed = canonical(next) !== canonical(this.fromFile);
    this.fromFile = next;
    return changed;
  }

  /**
   * Poll the file (fs.watchFile also sees a file that appears later, which fs.watch cannot). Node calls the
   * listener once at start when the file does not exist yet; only a real change of state reaches onChange.
   */
  watch(onChange: () => void, intervalMs = 300): void {
    if (!this.file) return;
    fs.watchFile(this.file, { interval: intervalMs }, () => {
      if (this.read()) onChange();
    });
  }

  unwatch(): void {
    if (this.file) fs.unwatchFile(this.file);
  }
}

function canonical(o: Record<string, boolean>): string {
  return JSON.stringify(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
}

/** Read a state file as corectl sees it (missing or broken: empty). */
export function readState(file: string): Record<string, boolean> {
  return new PluginState(file, {}).fileEntries();
}

/** Write atomically (temp file + rename) so a watching host never reads half a file. */
export function writeState(file: string, state: Record<string, boolean>): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(state, null, 2) + '\n');
  fs.renameSync(tmp, file);
}
