/**
 * Watching the manifests folder. fs.watch is fast but unreliable (several events per save, nothing on some
 * network and container mounts, an 'error' when the folder goes away), so it only triggers a check; a slow
 * poll backs it up. A check compares a fingerprint of the folder's manifest files (names and contents), so
 * repeated events, touches and the host's own start-up never cause a reload: only a real change does.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

export function isManifestFile(name: string): boolean {
  return name.endsWith('.yaml') || name.endsWith('.yml');
}

/** A hash of every manifest file's name and bytes; '' when the folder cannot be read. */
export function fingerprint(dir: string): string {
  const h = createHash('sha1');
  try {
    for (const name of fs.readdirSync(dir).filter(isManifestFile).sort()) {
      h.update(name + '\0');
      try {
        h.update(fs.readFileSync(path.join(dir, name)));
      } catch {
        h.update('(unreadable)'); // removed between readdir and read: the next check sees the final state
      }
      h.update('\0');
    }
  } catch {
    return '';
  }
  return h.digest('hex');
}

function statIno(dir: string): number | undefined {
  try {
    return fs.statSync(dir).ino;
  } catch {
    return undefined;
  }
}

export interface WatchOptions {
  /** Quiet time after the last fs event before checking (a copy of several files ends first). */
  debounceMs?: number;
  /** Poll interval for file systems where fs.watch says nothing. */
  pollMs?: number;
}

export class ManifestWatcher {
  private last: string;
  private fsw?: fs.FSWatcher;
  private timer?: NodeJS.Timeout;
  private poller?: NodeJS.Timeout;
  private closed = false;
  /** The watched folder's inode: a folder replaced by a rename (a common way to ship a set) is re-watched. */
  private ino?: number;

  /** Takes the fingerprint now: the set the caller is about to load counts as seen. */
  constructor(
    private readonly dir: string,
    private readonly onChange: () => void,
    private readonly log: Logger,
    private readonly opts: WatchOptions = {},
  ) {
    this.last = fingerprint(dir);
  }

  start(): void {
    this.watchFs();
    this.poller = setInterval(() => this.check(), this.opts.pollMs ?? 2000);
    this.poller.unref();
  }

  private watchFs(): void {
    try {
      this.ino = fs.statSync(this.dir).ino;
      this.fsw = fs.watch(this.dir, () => this.schedule());
      this.fsw.on('error', (err) => {
        // The folder was removed or replaced: keep polling (which also notices it coming back).
        this.log.warn({ err: err.message, dir: this.dir }, 'manifest folder watch lost; polling instead');
        this.fsw?.close();
        this.fsw = undefined;
      });
    } catch (err) {
      this.log.warn({ err: (err as Error).message, dir: this.dir }, 'cannot watch the manifest folder; polling instead');
    }
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.check(), this.opts.debounceMs ?? 150);
    this.timer.unref();
  }

  /** Compare the fingerprint; call onChange once per real change. */
  check(): void {
    if (this.closed) return;
    const ino = statIno(this.dir);
    if (this.fsw && ino !== this.ino) {
      this.fsw.close();
      this.fsw = undefined;
    }
    if (!this.fsw && ino !== undefined) this.watchFs();
    const now = fingerprint(this.dir);
    if (now === this.last) return;
    this.last = now;
    this.onChange();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    clearInterval(this.poller);
    this.fsw?.close();
  }
}
