/**
 * Git host payloads (spec: POST /webhook; facts §6-§8): which host sent it, and what it asks for: deploy a
 * commit of the tracked branch, or nothing (other branch, tag, deletion, ping, unhandled event) with the
 * reason. Every field read is type-checked; a wrong type is an invalid payload, never an exception.
 */
import { SHA, TAG } from './git.ts';

export type Provider = 'github' | 'gitlab' | 'bitbucket';
type Headers = Record<string, string | string[] | undefined>;

export class InvalidPayload extends Error {}

export type Decision =
  | {
      action: 'deploy';
      /** null: the branch head at deployment time. */
      commit: string | null;
      /** A release: deploy the commit this tag names. */
      tag?: string;
      message?: string;
      pusher?: string;
      /** A redeploy that asked for a clean rebuild (dependencies installed again). */
      forceInstall?: boolean;
    }
  | { action: 'ignore'; reason: string };

const ZERO = /^0+$/;
const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const isObj = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function providerFromHeaders(h: Headers): { provider: Provider; event: string } | null {
  const gh = first(h['x-github-event']) ?? first(h['x-host-event']);
  if (gh !== undefined) return { provider: 'github', event: gh };
  const gl = first(h['x-gitlab-event']);
  if (gl !== undefined || first(h['x-gitlab-token']) !== undefined || first(h['x-lab-token']) !== undefined)
    return { provider: 'gitlab', event: gl ?? '' };
  const bb = first(h['x-event-key']);
  if (bb !== undefined) return { provider: 'bitbucket', event: bb };
  return null;
}

export function providerFromShape(body: Record<string, any>): { provider: Provider; event: string } | null {
  if (isObj(body.push) && Array.isArray(body.push.changes)) return { provider: 'bitbucket', event: 'repo:push' };
  if (Array.isArray(body.changes) && body.changes.some((c: any) => isObj(c) && isObj(c.ref))) return { provider: 'bitbucket', event: 'repo:refs_changed' };
  if (typeof body.object_kind === 'string') return { provider: 'gitlab', event: '' };
  if (typeof body.ref === 'string') return { provider: 'github', event: 'push' };
  return null;
}

/** JSON, or a form-encoded body whose `payload` field holds the JSON (GitHub's other content type). */
export function parsePayload(raw: Buffer, contentType: string | undefined): Record<string, any> {
  const form = /^application\/x-www-form-urlencoded\b/i.test(contentType ?? '');
  // Look at the first byte before making a string of the whole body: a large upload that is not a JSON
  // object (or a form) is refused without another copy of it in memory.
  let i = 0;
  while (i < raw.length && (raw[i] === 0x20 || raw[i] === 0x0a || raw[i] === 0x0d || raw[i] === 0x09)) i++;
  if (i === raw.length) throw new InvalidPayload('the body is empty');
  if (!form && raw[i] !== 0x7b) throw new InvalidPayload(raw[i] === 0x5b ? 'the body must be a JSON object' : 'the body is not valid JSON');
  let text = raw.toString('utf8');
  if (form) {
    const payload = new URLSearchParams(text).get('payload');
    if (payload === null) throw new InvalidPayload('a form-encoded body must carry the JSON in its payload field');
    text = payload;
  }
  if (!text.trim()) throw new InvalidPayload('the body is empty');
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new InvalidPayload('the body is not valid JSON');
  }
  if (!isObj(body)) throw new InvalidPayload('the body must be a JSON object');
  return body;
}

/** The host's delivery id, when it sends one (dedupe and trace); retries of one delivery keep it. */
export function deliveryIdOf(h: Headers): string | undefined {
  for (const name of ['x-github-delivery', 'idempotency-key', 'x-gitlab-event-uuid', 'x-request-uuid', 'x-request-id']) {
    const v = first(h[name]);
    if (v !== undefined && /^[\w.:{}-]{1,200}$/.test(v)) return v;
  }
  return undefined;
}

function str(o: Record<string, any> | undefined, key: string, where: string): string | undefined {
  const v = o?.[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new InvalidPayload(`${where}${key} must be a string`);
  return v;
}

function sha(o: Record<string, any> | undefined, key: string, where: string): string | undefined {
  const v = str(o, key, where)?.toLowerCase();
  if (v === undefined) return undefined;
  if (!SHA.test(v)) throw new InvalidPayload(`${where}${key} is not a commit id`);
  return v;
}

function obj(o: Record<string, any>, key: string, where: string): Record<string, any> | undefined {
  const v = o[key];
  if (v === undefined || v === null) return undefined;
  if (!isObj(v)) throw new InvalidPayload(`${where}${key} must be an object`);
  return v;
}

function lastMessage(commits: unknown, id?: string): string | undefined {
  if (!Array.isArray(commits)) return undefined;
  const list = commits.filter(isObj);
  const hit = (id && list.find((c) => c.id === id || c.hash === id)) || list[list.length - 1];
  return typeof hit?.message === 'string' ? hit.message.trim() : undefined;
}

/** Branch checks shared by the hosts; returns a reason to ignore, or null when `ref` is the tracked branch. */
function refProblem(ref: string, branch: string): string | null {
  if (ref.startsWith('refs/tags/')) return `tag push ${ref.slice(10)}: this service deploys pushes to branch ${branch}`;
  if (!ref.startsWith('refs/heads/')) return `ref ${ref} is not a branch`;
  const b = ref.slice(11);
  return b === branch ? null : `push to branch ${b}; this service deploys branch ${branch} (GIT_BRANCH)`;
}

export function interpret(provider: Provider, event: string, body: Record<string, any>, branch: string): Decision {
  if (provider === 'github') return github(event, body, branch);
  if (provider === 'gitlab') return gitlab(event, body, branch);
  return bitbucket(event, body, branch);
}

function github(event: string, body: Record<string, any>, branch: string): Decision {
  if (event === 'ping') return { action: 'ignore', reason: 'ping received: the webhook is set up; nothing to deploy' };
  if (event === 'release') return githubRelease(body, branch);
  if (event !== 'push') return { action: 'ignore', reason: `GitHub event ${event} is not handled (push, release and ping are)` };
  const ref = str(body, 'ref', '');
  if (ref === undefined) throw new InvalidPayload('ref is missing');
  const problem = refProblem(ref, branch);
  if (problem) return { action: 'ignore', reason: problem };
  if (body.deleted === true) return { action: 'ignore', reason: `branch ${branch} was deleted; nothing to deploy` };
  const head = obj(body, 'head_commit', '');
  const headId = sha(head, 'id', 'head_commit.');
  const after = sha(body, 'after', '');
  const message = str(head, 'message', 'head_commit.')?.trim() ?? lastMessage(body.commits, after);
  const pusher = str(obj(body, 'pusher', ''), 'name', 'pusher.') ?? str(obj(body, 'sender', ''), 'login', 'sender.');
  // A zero `after` is a deletion, unless head_commit.id is zero too: a redeploy request (no specific commit).
  if (after && ZERO.test(after)) {
    if (headId && ZERO.test(headId)) return { action: 'deploy', commit: null, message, pusher, forceInstall: body.forced === true };
    return { action: 'ignore', reason: `branch ${branch} was deleted; nothing to deploy` };
  }
  const commit = after ?? (headId && !ZERO.test(headId) ? headId : undefined) ?? null;
  return { action: 'deploy', commit, message, pusher };
}

function githubRelease(body: Record<string, any>, branch: string): Decision {
  const action = str(body, 'action', '');
  if (action === undefined) throw new InvalidPayload('action is missing');
  if (action !== 'published') return { action: 'ignore', reason: `release ${action}: only published releases deploy` };
  const release = obj(body, 'release', '');
  const tag = str(release, 'tag_name', 'release.');
  if (!release || tag === undefined) throw new InvalidPayload('release.tag_name is missing');
  if (!TAG.test(tag)) throw new InvalidPayload('release.tag_name is not a plain tag name');
  const target = str(release, 'target_commitish', 'release.');
  if (target && target !== branch && !SHA.test(target))
    return { action: 'ignore', reason: `release ${tag} targets ${target}; this service deploys branch ${branch}` };
  const name = str(release, 'name', 'release.');
  return { action: 'deploy', commit: null, tag, message: `release ${tag}${name ? `: ${name}` : ''}`, pusher: str(obj(body, 'sender', ''), 'login', 'sender.') };
}

function gitlab(event: string, body: Record<string, any>, branch: string): Decision {
  const kind =
    str(body, 'object_kind', '') ?? (event === 'Tag Push Hook' ? 'tag_push' : event === 'Push Hook' || body.ref !== undefined ? 'push' : event || 'unknown');
  if (kind === 'tag_push') return { action: 'ignore', reason: `tag push ${String(body.ref ?? '').replace('refs/tags/', '')}: this service deploys pushes to branch ${branch}` };
  if (kind !== 'push') return { action: 'ignore', reason: `GitLab event ${kind} is not handled (push is)` };
  const ref = str(body, 'ref', '');
  if (ref === undefined) throw new InvalidPayload('ref is missing');
  const problem = refProblem(ref, branch);
  if (problem) return { action: 'ignore', reason: problem };
  const after = sha(body, 'after', '');
  const checkout = sha(body, 'checkout_sha', '');
  if (after && ZERO.test(after)) return { action: 'ignore', reason: `branch ${branch} was deleted; nothing to deploy` };
  const commit = checkout ?? after ?? null;
  return {
    action: 'deploy',
    commit,
    message: lastMessage(body.commits, commit ?? undefined),
    pusher: str(body, 'user_username', '') ?? str(body, 'user_name', ''),
  };
}

function bitbucket(event: string, body: Record<string, any>, branch: string): Decision {
  if (event === 'repo:refs_changed') return bitbucketServer(body, branch);
  if (event !== 'repo:push') return { action: 'ignore', reason: `Bitbucket event ${event} is not handled (repo:push is)` };
  const push = obj(body, 'push', '');
  if (!push || !Array.isArray(push.changes)) throw new InvalidPayload('push.changes must be an array');
  const seen: string[] = [];
  let hit: Record<string, any> | undefined;
  for (const [i, c] of push.changes.entries()) {
    if (!isObj(c)) throw new InvalidPayload(`push.changes[${i}] must be an object`);
    const side = obj(c, 'new', `push.changes[${i}].`) ?? obj(c, 'old', `push.changes[${i}].`);
    const name = str(side, 'name', `push.changes[${i}].new.`);
    const type = str(side, 'type', `push.changes[${i}].new.`) ?? 'branch';
    if (name === branch && type === 'branch') hit = c;
    else if (name) seen.push(`${type} ${name}`);
  }
  if (!hit) return { action: 'ignore', reason: `no change to branch ${branch} (pushed: ${seen.join(', ') || 'nothing'}); this service deploys branch ${branch} (GIT_BRANCH)` };
  const next = obj(hit, 'new', '');
  if (!next || hit.closed === true) return { action: 'ignore', reason: `branch ${branch} was deleted; nothing to deploy` };
  const target = obj(next, 'target', 'new.');
  const actor = obj(body, 'actor', '');
  return {
    action: 'deploy',
    commit: sha(target, 'hash', 'new.target.') ?? null,
    message: str(target, 'message', 'new.target.')?.trim(),
    pusher: str(actor, 'username', 'actor.') ?? str(actor, 'display_name', 'actor.'),
  };
}

/** Bitbucket Data Center `repo:refs_changed`: changes[] of {ref:{displayId,type}, type, toHash}. */
function bitbucketServer(body: Record<string, any>, branch: string): Decision {
  if (!Array.isArray(body.changes)) throw new InvalidPayload('changes must be an array');
  const hit = body.changes.filter(isObj).find((c: any) => isObj(c.ref) && c.ref.type === 'BRANCH' && c.ref.displayId === branch);
  if (!hit) return { action: 'ignore', reason: `no change to branch ${branch}; this service deploys branch ${branch} (GIT_BRANCH)` };
  if (hit.type === 'DELETE') return { action: 'ignore', reason: `branch ${branch} was deleted; nothing to deploy` };
  const actor = obj(body, 'actor', '');
  return { action: 'deploy', commit: sha(hit, 'toHash', 'changes[].') ?? null, pusher: str(actor, 'name', 'actor.') };
}
