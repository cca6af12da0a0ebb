/**
 * Which plugins are enabled on this node: the config's `plugins:` section, overridden by the state file
 * that `corectl plugins enable|disable` writes (`<dataDir>/plugins.json`), which a running host watches.
 */
import fs from 'node:fs';
import path from 'node:path';

export class PluginState {
  private overrides: Record<string, boolean> = {};
  private inMemory: Record<string, boolean> = {};

  constructor(
    readonly file: string | null,
    private readonly fromConfig: Record<string, boolean>,
  ) {
    this.read();
  }

  enabled(id: string): boolean {
    return this.inMemory[id] ?? this.overrides[id] ?? this.fromConfig[id] ?? true;
  }

  set(id: string, enabled: boolean): void {
    if (!this.file) {
      this.inMemory[id] = enabled;
      return;
    }
    this.read();
    this.overrides[id] = enabled;
    writeState(this.file, this.overrides);
  }

  /** Re-read the file; a broken file is ignored (the last good state stays). */
  read(): void {
    if (!this.file) return;
    try {
      const v = JSON.parse(fs.readFileSync(this.file, 'utf8'));
      if (v && typeof v === 'object') this.overrides = Object.fromEntries(Object.entries(v).filter(([, b]) => typeof b === 'boolean')) as Record<string, boolean>;
    } catch {
      /* missing or half-written: keep what we had */
    }
  }

  watch(onChange: () => void): void {
    if (!this.file) return;
    fs.watchFile(this.file, { interval: 300 }, () => {
      this.read();
      onChange();
    });
  }

  unwatch(): void {
    if (this.file) fs.unwatchFile(this.file);
  }
}

/** Write atomically (temp file + rename) so a watching host never reads half a file. */
export function writeState(file: string, state: Record<string, boolean>): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(state, null, 2) + '\n');
  fs.renameSync(tmp, file);
}
