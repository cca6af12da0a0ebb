/**
 * Real git: a bare cache of the configured repository (fetched at each deployment) and one fresh checkout
 * of the exact commit per release folder. Every argument is a vector entry; refs and shas from webhooks are
 * checked against strict patterns first, and the URL and branch are the operator's.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Writable } from 'node:stream';

export const SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
export const TAG = /^(?!-)(?!.*\.\.)[A-Za-z0-9._\/+-]{1,200}$/;

export class GitError extends Error {}

export interface GitRun {
  log?: Writable;
  signal?: AbortSignal;
  env: NodeJS.ProcessEnv;
}

function git(args: string[], opts: GitRun & { cwd?: string }): Promise<string> {
  opts.log?.write(`$ git ${args.join(' ')}\n`);
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd: opts.cwd, env: opts.env, signal: opts.signal, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (stderr) opts.log?.write(stderr);
      if (err) {
        if (opts.signal?.aborted) return reject(opts.signal.reason);
        return reject(new GitError(`git ${args[0] === '-C' ? args[2] : args[0]} failed: ${(stderr || err.message).trim().split('\n').pop()}`));
      }
      resolve(stdout.trim());
    });
  });
}

export class GitCache {
  constructor(
    private readonly dir: string,
    private readonly url: string,
    private readonly branch: string,
  ) {}

  private get remoteRef() {
    return `refs/remotes/origin/${this.branch}`;
  }

  private async ensure(o: GitRun): Promise<void> {
    if (fs.existsSync(path.join(this.dir, 'HEAD'))) return;
    fs.mkdirSync(path.dirname(this.dir), { recursive: true });
    await git(['init', '-q', '--bare', this.dir], o);
  }

  /** Fetch the tracked branch; returns its head commit. */
  async fetchBranch(o: GitRun): Promise<string> {
    await this.ensure(o);
    await git(['-C', this.dir, 'fetch', '-q', '--prune', '--no-tags', '--', this.url, `+refs/heads/${this.branch}:${this.remoteRef}`], o);
    return git(['-C', this.dir, 'rev-parse', '--verify', `${this.remoteRef}^{commit}`], o);
  }

  /** The commit a release tag names (fetched from the repository). */
  async resolveTag(tag: string, o: GitRun): Promise<string> {
    if (!TAG.test(tag)) throw new GitError(`tag name ${JSON.stringify(tag)} is not a plain ref name`);
    await git(['-C', this.dir, 'fetch', '-q', '--no-tags', '--', this.url, `+refs/tags/${tag}:refs/tags/${tag}`], o);
    return git(['-C', this.dir, 'rev-parse', '--verify', `refs/tags/${tag}^{commit}`], o);
  }

  /** Check a pushed commit exists and belongs to the tracked branch (a late webhook for a commit a force push dropped is refused). */
  async checkOnBranch(commit: string, o: GitRun): Promise<void> {
    if (!SHA.test(commit)) throw new GitError(`commit ${JSON.stringify(commit)} is not a full commit id`);
    try {
      await git(['-C', this.dir, 'cat-file', '-e', `${commit}^{commit}`], o);
    } catch {
      throw new GitError(`commit ${commit} was not found on branch ${this.branch} of ${this.url}`);
    }
    try {
      await git(['-C', this.dir, 'merge-base', '--is-ancestor', commit, this.remoteRef], o);
    } catch {
      throw new GitError(`commit ${commit} is not on branch ${this.branch} (force-pushed away?)`);
    }
  }

  async subject(commit: string, o: GitRun): Promise<string> {
    return git(['-C', this.dir, 'log', '-1', '--format=%s', commit], o).catch(() => '');
  }

  /** A fresh working tree of exactly `commit` in `dir` (which must not exist). */
  async checkout(commit: string, dir: string, o: GitRun): Promise<void> {
    await git(['init', '-q', dir], o);
    await git(['-C', dir, 'fetch', '-q', '--depth', '1', '--no-tags', '--', this.dir, commit], o);
    await git(['-C', dir, '-c', 'advice.detachedHead=false', 'checkout', '-q', '--detach', 'FETCH_HEAD'], o);
    const head = await git(['-C', dir, 'rev-parse', 'HEAD'], o);
    if (head !== commit) throw new GitError(`checked out ${head}, expected ${commit}`);
  }
}
