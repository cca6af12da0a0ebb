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

/**
 * Credentials for a private repository over HTTP(S): GIT_USERNAME / GIT_TOKEN, or a user and password
 * written into GIT_REPO_URL. They reach git as an `http.extraHeader` through GIT_CONFIG_* env variables,
 * never in an argument (argv is world-readable in /proc) or a URL git could print; `redact` scrubs them
 * (and any `scheme://user:pass@` form) from every text that reaches a log or an answer.
 */
export class GitAuth {
  /** GIT_REPO_URL without its user and password. */
  readonly url: string;
  private readonly header: string | null;
  private readonly secrets: string[];

  constructor(repoUrl: string, username = '', token = '') {
    let url = repoUrl;
    let user = username;
    let pass = token;
    if (/^https?:\/\//i.test(repoUrl)) {
      try {
        const u = new URL(repoUrl);
        if (u.username || u.password) {
          user ||= decodeURIComponent(u.username);
          pass ||= decodeURIComponent(u.password);
          u.username = '';
          u.password = '';
          url = u.toString();
        }
      } catch {
        /* not a URL git would take either; git says so at fetch */
      }
    } else pass = ''; // a path or ssh URL: no HTTP header to send
    this.url = url;
    const basic = pass ? Buffer.from(`${user || 'x-access-token'}:${pass}`).toString('base64') : null;
    this.header = basic ? `Authorization: Basic ${basic}` : null;
    this.secrets = [token, pass, basic ?? ''].filter((x) => x && x.length >= 4);
  }

  /** Env for git: the credentials as a config header (not inherited by anything but this git call). */
  env(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    if (!this.header) return base;
    return { ...base, GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'http.extraHeader', GIT_CONFIG_VALUE_0: this.header };
  }

  redact = (text: string): string => {
    let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]*:[^\s/@]*@/gi, '$1***@');
    for (const s of this.secrets) out = out.split(s).join('***');
    return out;
  };
}

export interface GitRun {
  log?: Writable;
  signal?: AbortSignal;
  env: NodeJS.ProcessEnv;
}

function git(args: string[], opts: GitRun & { cwd?: string; redact?: (s: string) => string }): Promise<string> {
  const redact = opts.redact ?? ((s: string) => s);
  opts.log?.write(`$ git ${args.join(' ')}\n`);
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd: opts.cwd, env: opts.env, signal: opts.signal, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (stderr) opts.log?.write(stderr);
      if (err) {
        if (opts.signal?.aborted) return reject(opts.signal.reason);
        return reject(new GitError(redact(`git ${args[0] === '-C' ? args[2] : args[0]} failed: ${(stderr || err.message).trim().split('\n').pop()}`)));
      }
      resolve(stdout.trim());
    });
  });
}

export class GitCache {
  private readonly url: string;

  constructor(
    private readonly dir: string,
    private readonly auth: GitAuth,
    private readonly branch: string,
  ) {
    this.url = auth.url;
  }

  /** The remote calls carry the credentials; local ones do not need them. */
  private remote(o: GitRun): GitRun & { redact: (s: string) => string } {
    return { ...o, env: this.auth.env(o.env), redact: this.auth.redact };
  }

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
    await git(['-C', this.dir, 'fetch', '-q', '--prune', '--no-tags', '--', this.url, `+refs/heads/${this.branch}:${this.remoteRef}`], this.remote(o));
    return git(['-C', this.dir, 'rev-parse', '--verify', `${this.remoteRef}^{commit}`], o);
  }

  /** The commit a release tag names (fetched from the repository). */
  async resolveTag(tag: string, o: GitRun): Promise<string> {
    if (!TAG.test(tag)) throw new GitError(`tag name ${JSON.stringify(tag)} is not a plain ref name`);
    await git(['-C', this.dir, 'fetch', '-q', '--no-tags', '--', this.url, `+refs/tags/${tag}:refs/tags/${tag}`], this.remote(o));
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

  /** Whether `a` is `b` or one of its ancestors (both known locally). */
  async isAncestor(a: string, b: string, o: GitRun): Promise<boolean> {
    if (!SHA.test(a) || !SHA.test(b)) return false;
    return git(['-C', this.dir, 'merge-base', '--is-ancestor', a, b], o).then(
      () => true,
      () => false,
    );
  }

  /** Whether a commit is known to the cache (fetched before). */
  async has(commit: string, o: GitRun): Promise<boolean> {
    if (!SHA.test(commit)) return false;
    return git(['-C', this.dir, 'cat-file', '-e', `${commit}^{commit}`], o).then(
      () => true,
      () => false,
    );
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
