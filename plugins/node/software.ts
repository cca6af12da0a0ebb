/**
 * The node software is a git checkout (`node.softwareDir`): updates and branch switches run git and npm as
 * argument vectors there, then restart the node so it runs the new code (spec: "services restart").
 *
 * - updatecore: fetch, then reset the checkout hard to the remote's head of the current branch
 * - softupdatecore: drop local changes to tracked files, then a fast-forward pull; ...install adds `npm ci`
 * - hardupdatecore: as updatecore, after removing node_modules, then `npm ci`
 * - entermaster / enterdevelopment: fetch and check out that branch at the remote's head
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiError } from '../../core/plugin-api.ts';
import { mustRun } from './procs.ts';
import type { NodeConfig } from './settings.ts';

export function softwareActions(config: NodeConfig, logFile: string, restart: () => void) {
  const dir = config.softwareDir;
  const opts = () => ({ cwd: dir, timeoutMs: config.commandTimeoutMs, logFile });
  const git = (...args: string[]) => mustRun([...config.git.command, ...args], opts());
  const npmInstall = () => mustRun([...config.npm.command, ...config.npm.installArgs], opts());
  const remote = config.git.remote;

  async function checkout(): Promise<string> {
    if (!fs.existsSync(path.join(dir, '.git'))) throw new ApiError(500, 'NotACheckout', `The node software folder ${dir} is not a git checkout`);
    // A git that crashed leaves its index lock behind, and every later command fails on it (facts §4.5).
    fs.rmSync(path.join(dir, '.git', 'index.lock'), { force: true });
    const branch = (await git('rev-parse', '--abbrev-ref', 'HEAD')).trim();
    if (!branch || branch === 'HEAD') throw new ApiError(409, 'DetachedHead', 'The node software is not on a branch; use entermaster or enterdevelopment first');
    return branch;
  }
  const head = async () => (await git('rev-parse', '--short', 'HEAD')).trim();

  async function hardReset(branch: string) {
    await git('fetch', '--prune', remote);
    await git('reset', '--hard', `${remote}/${branch}`);
  }

  function done(message: string) {
    restart();
    return { message: `${message}; restarting CoreOS` };
  }

  return {
    async updatecore() {
      const branch = await checkout();
      await hardReset(branch);
      return done(`Core updated to ${branch} ${await head()}`);
    },
    async softupdatecore() {
      const branch = await checkout();
      await git('checkout', '--', '.');
      await git('pull', '--ff-only', remote, branch);
      return done(`Core soft updated to ${branch} ${await head()}`);
    },
    async softupdatecoreinstall() {
      const branch = await checkout();
      await git('checkout', '--', '.');
      await git('pull', '--ff-only', remote, branch);
      await npmInstall();
      return done(`Core soft updated to ${branch} ${await head()} and its dependencies installed`);
    },
    async hardupdatecore() {
      const branch = await checkout();
      // The sources first: a fetch or reset that fails (no remote, no network) must leave the running
      // node's dependencies in place, not a checkout without node_modules.
      await hardReset(branch);
      fs.rmSync(path.join(dir, 'node_modules'), { recursive: true, force: true });
      await npmInstall();
      return done(`Core hard updated to ${branch} ${await head()}`);
    },
    async enter(branch: string) {
      await checkout().catch((e) => {
        if (!(e instanceof ApiError && e.name === 'DetachedHead')) throw e;
      });
      await git('fetch', '--prune', remote);
      await git('checkout', '-B', branch, '--track', `${remote}/${branch}`);
      return done(`Switched to the ${branch} branch at ${await head()}`);
    },
  };
}
