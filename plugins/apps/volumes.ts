/**
 * App volumes: one ext4 file per component (`<volumesDir>/<container>COREFSVOL`, `hdd` GB, fallocate +
 * mkfs.ext4) loop-mounted on `<appsDir>/<container>`, so the disk quota is the file system's size. The
 * container's primary data folder is `<mount>/appdata`; extra mounts (`m:`, `f:`) sit beside it.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { mkdirAt } from '../../lib/no-follow/walk.ts';

const run = promisify(execFile);
const GB = 1024 ** 3;
const gb = (bytes: number) => `${(bytes / GB).toFixed(2)} GB`;

/**
 * Refuse folders for the volumes (`apps.appsDir`, `apps.volumesDir`) that hold the node's secrets: the data
 * folder itself or any folder above it, or a folder of the node's own keys (`apps/` holds `secret.key`,
 * `peers/` `node-key.pem`, `node/` the PGP key) or one above it. Apps are given folders under `appsDir`
 * (`<appsDir>/<container>/<name>`); none of the node's secrets may live under a folder an app can be given.
 * Throws naming the key; the defaults (`<dataDir>/apps/volumes`, `<dataDir>/apps/mounts`) pass.
 */
export function checkVolumeFolders(dataDir: string, folders: Record<string, string>): void {
  const real = (p: string) => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  const secrets = [dataDir, path.join(dataDir, 'apps'), path.join(dataDir, 'peers'), path.join(dataDir, 'node')].map(real);
  for (const [key, dir] of Object.entries(folders)) {
    const d = real(dir);
    const held = secrets.find((s) => s === d || s.startsWith(d.endsWith('/') ? d : `${d}/`));
    if (held) throw new Error(`apps.${key} (${dir}) must not be ${held} or a folder above it: the node's data and secret keys live there, and apps are given folders under it; give the volumes a folder of their own`);
  }
}

export class Volumes {
  /** Bytes of volumes being allocated now (counted as taken: two installs at once cannot share the room). */
  private allocating = 0;

  constructor(
    readonly volumesDir: string,
    readonly appsDir: string,
    /** Bytes of the volumes' filesystem the node keeps free for itself (`apps.diskReserveGB`). */
    readonly reserveBytes = 0,
  ) {}

  /**
   * Refuse, naming the numbers, unless `gbs` more GB of volumes fit on the filesystem that holds them with
   * the reserve left over. An unpaid install asking 20 GB on a node with 1.98 GB free filled the disk to 0
   * bytes (fallocate) before it failed. The volumes of installed apps are allocated in full (fallocate,
   * formatted without discard), so the free space already counts what they hold; volumes being allocated
   * at this moment are counted as taken.
   */
  async assertRoom(gbs: number, what: string): Promise<void> {
    await fs.promises.mkdir(this.volumesDir, { recursive: true });
    const st = await fs.promises.statfs(this.volumesDir);
    const free = st.bavail * st.bsize - this.allocating;
    const need = gbs * GB;
    if (free - need < this.reserveBytes)
      throw new Error(
        `not enough disk for ${what}: ${gbs} GB asked, the filesystem holding ${this.volumesDir} has ${gb(Math.max(free, 0))} free` +
          `${this.allocating ? ' (besides volumes being made now)' : ''} and the node keeps ${gb(this.reserveBytes)} of it in reserve (apps.diskReserveGB)`,
      );
  }

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

  /** Make (`size` GB, when there is room: assertRoom), format and mount the component's volume (an existing file is mounted as it is). */
  async create(container: string, size: number): Promise<string> {
    await fs.promises.mkdir(this.volumesDir, { recursive: true });
    const file = this.file(container);
    const mp = this.mountpoint(container);
    if (!fs.existsSync(file)) {
      await this.assertRoom(size, `the volume of ${container}`);
      this.allocating += size * GB;
      try {
        await run('fallocate', ['-l', `${size}G`, file]);
        // Lazy inode tables: formatting a large volume takes a fraction of a second instead of seconds.
        // `nodiscard`: mke2fs otherwise "discards" a regular file by punching holes in it, which undid the
        // fallocate (a 1 GB volume file then held 664 KB on disk: the space was not reserved).
        await run('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1,lazy_journal_init=1,nodiscard', file]);
      } finally {
        this.allocating -= size * GB;
      }
    }
    await this.mount(container);
    // Through the root's descriptor: an `appdata` that is a link (bind-check.ts refuses to start it) is left
    // as it is, never followed to make a folder where it points.
    await mkdirAt(mp, 'appdata');
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
    await mkdirAt(mp, 'appdata');
  }
}
