/**
 * Run an extraction unprivileged (extract-worker.ts in a child process as `nobody` when the node is root),
 * then give the extracted entries the archive's owners from the node, by descriptor. The child gets the
 * archive and the staging folder as open descriptors only; the staging folder is handed to it for the
 * time of the extraction (chown), and is a fresh folder no container can reach.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ApiError, runnableModule } from '../../core/plugin-api.ts';
import type { ExtractLimits, ExtractStats } from './archive.ts';
import type { Dir } from './safe-path.ts';

const WORKER = new URL(`./extract-worker${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url);
/** `nobody`: the worker's user and group when the node runs as root. */
export const WORKER_ID = 65534;

export async function extractUnprivileged(stage: Dir, archive: FileHandle, limits: ExtractLimits, opts: { signal?: AbortSignal; checkpoint?: () => void } = {}): Promise<ExtractStats> {
  const root = process.getuid?.() === 0;
  if (root) await stage.fh.chown(WORKER_ID, WORKER_ID);
  // From the sources (tests, tools) the compiled worker when dist/ is current, else the TypeScript one through tsx.
  const { url, compiled } = await runnableModule(WORKER);
  const worker = fileURLToPath(url);
  const args = [...(compiled ? [] : ['--import', 'tsx']), worker, JSON.stringify(limits)];
  const child = spawn(process.execPath, args, {
    // The repository (or dist/) root: where `--import tsx` resolves from.
    cwd: path.resolve(path.dirname(worker), '../..'),
    stdio: [archive.fd, 'pipe', 'ignore', stage.fh.fd],
    ...(root ? { uid: WORKER_ID, gid: WORKER_ID } : {}),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TMPDIR: '/tmp' },
  });
  const owners: { p: string[]; u: number; g: number }[] = [];
  let result: { done?: ExtractStats; error?: { code: number | string; name: string; message: string } } = {};
  const onAbort = () => child.kill('SIGKILL');
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    for await (const line of readline.createInterface({ input: child.stdout! })) {
      const m = JSON.parse(line);
      if (m.p) owners.push(m);
      else result = m;
    }
    await exited;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
  }
  opts.checkpoint?.();
  if (result.error) throw new ApiError(result.error.code, result.error.name, result.error.message);
  if (!result.done) throw new ApiError(500, 'ExtractFailed', 'The extraction worker ended without an answer');
  // The archive's owners, applied by the node (the worker cannot): by descriptor, links never followed.
  if (root) {
    await stage.fh.chown(0, 0);
    let cache = null as { key: string; dir: Dir } | null;
    try {
      for (const o of owners) {
        const key = o.p.slice(0, -1).join('/');
        if (cache?.key !== key) {
          await cache?.dir.close();
          cache = { key, dir: await stage.root.walk([...stage.rel, ...o.p.slice(0, -1)]) };
        }
        await fs.promises.lchown(cache.dir.at(o.p[o.p.length - 1]), o.u, o.g);
      }
    } finally {
      await cache?.dir.close();
    }
  }
  return result.done;
}
