/**
 * The check of a container's bind sources, run by the engine before every create and every start (and
 * restart) of a container: Docker resolves a bind source on the host as root and follows every symbolic
 * link in it. An owner can put a link where `appdata` was (the container makes `ln -s /some/host/dir
 * /data/lnk`, the volume file operations move it to the volume root as `appdata`); a start then gave the
 * container that host folder, `apps/secret.key` and `peers/node-key.pem` included (test/tenants/mounts.test.ts:
 * without this check the restart succeeds). So each source must be `<appsDir>/<container>/<name>` with `<name>` one plain
 * component, the volume must be mounted, and the walk from the volume root to `<name>` opens every step
 * O_NOFOLLOW (lib/no-follow): a link anywhere refuses the start. Nothing is repaired: the link stays where
 * the owner put it, the component stays down and the refusal is reported (tampering kind `mount_refused`).
 *
 * Between this check and Docker's mount nobody can swap the source: the container sees only the folders
 * bound into it (never the volume root, where they sit), and the volume file operations refuse to move,
 * rename, remove or replace these names (the volumes plugin, `mountRoots` of the apps service).
 */
import path from 'node:path';
import { ApiError } from '../../core/plugin-api.ts';
import { mkdirAt, openNoFollow, WalkStopped } from '../../lib/no-follow/walk.ts';
import { parseContainerData } from './spec-rules.ts';
import type { AppSpec } from './spec.ts';
import type { Volumes } from './volumes.ts';

export class MountRefused extends ApiError {
  constructor(readonly container: string, message: string) {
    super(409, 'MountRefused', message);
  }
}

/** The host source of each `source:target[:options]` bind. */
export const bindSources = (binds: string[]) => binds.map((b) => b.split(':')[0]);

/**
 * Refuse (MountRefused) unless every bind source of `container` is a folder or regular file reached from
 * its volume root without a link. A missing folder is made here, by descriptor (Docker would make it
 * following links). `create`: the check of a container being made, which an install does while its fresh
 * volume is still being formatted (installer.ts): the form of each source always, the walk when the volume
 * is mounted already; the start that follows checks everything.
 */
export async function checkBindSources(volumes: Volumes, container: string, binds: string[], when: 'create' | 'start'): Promise<void> {
  for (const src of bindSources(binds)) {
    const refuse = (why: string) => new MountRefused(container, `${container} is not ${when === 'create' ? 'created' : 'started'}: its bind source ${src} ${why}; links and paths outside the volume are never mounted`);
    const rel = path.relative(volumes.appsDir, src);
    const parts = rel.split(path.sep);
    if (!path.isAbsolute(src) || path.normalize(src) !== src || parts.length !== 2 || parts.some((p) => !p || p === '.' || p === '..'))
      throw refuse(`is not one name inside a component's volume (${volumes.appsDir}/<container>/<name>)`);
    const [owner, name] = parts;
    if (!volumes.isMounted(owner)) {
      if (when === 'create') continue;
      throw refuse(`is on the volume of ${owner}, which is not mounted`);
    }
    const root = volumes.mountpoint(owner);
    let opened: Awaited<ReturnType<typeof openNoFollow>>;
    try {
      opened = await openNoFollow(root, [name]);
    } catch (e) {
      if (!(e instanceof WalkStopped) || e.reason !== 'missing') throw refuse(e instanceof WalkStopped ? (e.reason === 'link' ? 'is a symbolic link' : e.message) : (e as Error).message);
      await mkdirAt(root, name).catch((err) => {
        throw refuse(`could not be made: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      });
      opened = await openNoFollow(root, [name]).catch((err) => {
        throw refuse((err as Error).message);
      });
    }
    await opened.fh.close();
  }
}

/**
 * The names at the root of component `i`'s volume that the node binds into containers: `appdata` and the
 * `m:`/`f:` names of its own containerData and the `c:`/`cf:` names other components give for it. The
 * volume file operations refuse to move, rename, remove or replace them (apps service `mountRoots`).
 */
export function mountRoots(spec: AppSpec, i: number): string[] {
  const out = new Set(['appdata']);
  spec.components.forEach((c, j) => {
    let mounts: ReturnType<typeof parseContainerData> = [];
    try {
      mounts = parseContainerData(c.containerData, 'containerData', j);
    } catch {
      // A specification the rules refuse never gets a container (Engine.binds parses it again).
    }
    for (const m of mounts) if ((m.kind === 'dir' || m.kind === 'file') && (m.component ?? j) === i) out.add(m.sub);
  });
  return [...out];
}
