/**
 * Test installs (`testappinstall`): the owner of an unpaid temporary message runs its app here once, to
 * see it start, and it is removed at once. A stranger's container on the node, so bounded: one test install
 * at a time per owner and `maxConcurrent` on the node; each ends within `timeoutSeconds` (pulls aborted,
 * everything made removed); it passes the same spec rules and port and disk checks as a paid install
 * (Installer.install). It never takes the node's single install slot: a test install from a registry that
 * trickled bytes held the slot for 65 s while its victim's redeploy was answered "busy".
 */
import { ApiError, type Reply } from '../../core/plugin-api.ts';
import type { Installer } from './installer.ts';
import type { AppSpec } from './spec.ts';
import { streamRun } from './stream.ts';

export interface TestInstallLimits {
  timeoutSeconds: number;
  maxConcurrent: number;
}

export class TestInstalls {
  /** Who runs a test install now, and of which app. */
  private readonly running = new Map<string, string>();

  constructor(
    private readonly installer: Installer,
    private readonly limits: TestInstallLimits,
  ) {}

  /** Start a test install of `spec` for `who` (the owner's id), answered as a progress stream. */
  start(who: string, spec: AppSpec, hash: string, onError: (e: unknown) => Record<string, unknown>): Reply {
    const mine = this.running.get(who);
    if (mine !== undefined) throw new ApiError(409, 'Busy', `Your test installation of ${mine} is still running; one test installation at a time per owner`);
    if (this.running.size >= this.limits.maxConcurrent)
      throw new ApiError(409, 'Busy', `${this.running.size} test installations are running on this node, the most it runs at once; try again when one ends`);
    this.running.set(who, spec.name);
    const limit = this.limits.timeoutSeconds;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(new Error(`the test installation took longer than ${limit} s (apps.testInstall.timeoutSeconds)`)), limit * 1000);
    const release = () => {
      clearTimeout(timer);
      this.running.delete(who);
    };
    return streamRun(
      release,
      async (progress) => {
        await this.installer.install(spec, hash, progress, { signal: timeout.signal, record: false });
        progress({ step: 'test', status: `App ${spec.name} installed and started; removing the test installation` });
        await this.installer.remove(spec.name, true, progress, spec);
        return `Test installation of ${spec.name} succeeded`;
      },
      onError,
    );
  }
}
