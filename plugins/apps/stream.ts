/**
 * Long app work (install, removal, redeploy) answers a stream of newline-delimited JSON objects, one a line
 * (the reference concatenated them with no separator; the fields are kept). The work runs to its end even
 * when the client goes away; the single install slot (or a test install's turn, test-installs.ts) is taken
 * before the answer starts, so a refusal is an ordinary envelope.
 */
import { PassThrough } from 'node:stream';
import { reply, type Reply } from '../../core/plugin-api.ts';
import type { Progress } from './engine.ts';
import type { Installer } from './installer.ts';

export function streamWork(installer: Installer, what: string, app: string, work: (progress: Progress) => Promise<string>, onError?: (e: unknown) => Record<string, unknown>): Reply {
  return streamRun(installer.acquire(what, app), work, onError);
}

/** Stream `work` whose right to run was taken before (`release` gives it back when the work ends). */
export function streamRun(release: () => void, work: (progress: Progress) => Promise<string>, onError?: (e: unknown) => Record<string, unknown>): Reply {
  const out = new PassThrough();
  const progress: Progress = (o) => {
    if (!out.writableEnded) out.write(`${JSON.stringify(o)}\n`);
  };
  // Swallow write errors of a client that went away; the work goes on.
  out.on('error', () => {});
  void (async () => {
    try {
      const message = await work(progress);
      progress({ status: 'success', message });
    } catch (e) {
      progress(onError ? onError(e) : { status: 'error', message: (e as Error).message });
    } finally {
      release();
      out.end();
    }
  })();
  return reply(200, out, { 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-store' });
}
