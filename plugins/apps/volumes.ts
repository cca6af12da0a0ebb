/**
 * App volumes: one ext4 file per component (`<volumesDir>/<container>COREFSVOL`, `hdd` GB, fallocate +
 * mkfs.ext4) loop-mounted on `<appsDir>/<container>`, so the disk quota is the file system's size. The
 * container's primary data folder is `<mount>/appdata`; extra mounts (`m:`, `f:`) sit beside it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export class Volumes {
  constructor(
    readonly volumesDir: string,
    readonly appsDir: string,
  ) {}

  file(container: string): string {
    return path.join(this.volumesDir, `${container}COREFSVOL`);
  }

  mountpoint(container: string): string {
    return path.join(this.appsDir, container);
  }

  isMounted(container: string): boolean {
    const mp = this.mountpoint(container);
    return fs.readFileSync('/proc/self/mounts', 'utf8').split('\n').some((l) => l.split(' ')[1] === mp);
  }

  /** Make, format and mount the component's volume (an existing file is mounted as it is). */
  async create(container: string, gb: number): Promise<string> {
    await fs.promises.mkdir(this.volumesDir, { recursive: true });
    const file = this.file(container);
    const mp = this.mountpoint(container);
    if (!fs.existsSync(file)) {
      await run('fallocate', ['-l', `${gb}G`, file]);
      // Lazy inode tables: formatting a large volume takes a fraction of a second instead of seconds.
      // `nodiscard`: mke2fs otherwise "discards" a regular file by punching holes in it, which undid the
      // fallocate (a 1 GB volume file then held 664 KB on disk: the space was not reserved).
      await run('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1,lazy_journal_init=1,nodiscard', file]);
    }
    await this.mount(container);
    await fs.promises.mkdir(path.join(mp, 'appdata'), { recursive: true });
    return mp;
  }

  /** Mount an existing volume (after a node or host restart). */
  async mount(container: string): Promise<void> {
    if (this.isMounted(container)) return;
    const mp = this.mountpoint(container);
    await fs.promises.mkdir(mp, { recursive: true });
    await run('mount', ['-o', 'loop', this.file(container), mp]);
  }

  exists(container: string): boolean {
    return fs.existsSync(this.file(container));
  }

  /** Unmount and delete; nothing left when it returns. */
  async remove(container: string): Promise<void> {
    const mp = this.mountpoint(container);
    if (this.isMounted(container)) await run('umount', [mp]).catch(() => run('umount', ['-l', mp]));
    await fs.promises.rm(mp, { recursive: true, force: true });
    await fs.promises.rm(this.file(container), { force: true });
  }

  /** Empty the data of a component (hard redeploy of one component). */
  async wipe(container: string): Promise<void> {
    const mp = this.mountpoint(container);
    for (const e of await fs.promises.readdir(mp)) if (e !== 'lost+found') await fs.promises.rm(path.join(mp, e), { recursive: true, force: true });
    await fs.promises.mkdir(path.join(mp, 'appdata'), { recursive: true });
  }
}
