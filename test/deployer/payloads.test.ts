/** Payload reading and signatures, over real GitHub examples (@octokit/webhooks-examples) and host fixtures. */
import assert from 'node:assert/strict';
import { sign } from '@octokit/webhooks-methods';
import { InvalidPayload, interpret, parsePayload, providerFromHeaders, providerFromShape } from '../../plugins/deployer/providers.ts';
import { verify, verifyHmac, verifyToken } from '../../plugins/deployer/signature.ts';
import { fixture, githubExample } from './support.ts';

const SHA = '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c';
const ZERO = '0'.repeat(40);

describe('deployer payloads', () => {
  describe('GitHub (real example payloads)', () => {
    it('deploys a push to the tracked branch, with its commit, message and pusher', () => {
      const p = githubExample('push', (e) => e.ref === 'refs/heads/master' && e.head_commit);
      const d = interpret('github', 'push', p, 'master');
      assert.equal(d.action, 'deploy');
      assert.equal(d.action === 'deploy' && d.commit, p.after);
      assert.equal(d.action === 'deploy' && d.pusher, p.pusher.name);
      assert.ok(d.action === 'deploy' && d.message);
    });

    it('ignores pushes to other branches, tags and branch deletions, saying why', () => {
      const push = githubExample('push', (e) => e.ref === 'refs/heads/master' && e.head_commit);
      const other = interpret('github', 'push', push, 'main');
      assert.deepEqual(other.action, 'ignore');
      assert.match((other as any).reason, /push to branch master; this service deploys branch main/);

      const tag = interpret('github', 'push', githubExample('push', (e) => e.ref.startsWith('refs/tags/') && !e.deleted), 'master');
      assert.match((tag as any).reason, /^tag push simple-tag/);

      const del = structuredClone(push);
      Object.assign(del, { deleted: true, after: ZERO, head_commit: null, commits: [] });
      assert.match((interpret('github', 'push', del, 'master') as any).reason, /deleted/);
      // Zero `after` without the deleted flag is still a deletion when head_commit is null.
      delete del.deleted;
      assert.match((interpret('github', 'push', del, 'master') as any).reason, /deleted/);
    });

    it('reads a zero head_commit.id (not deleted) as a redeploy of the branch head, forced = clean install', () => {
      const d = interpret('github', 'push', { ref: 'refs/heads/main', after: ZERO, forced: true, head_commit: { id: ZERO, message: 'Hard redeploy' } }, 'main');
      assert.deepEqual(d, { action: 'deploy', commit: null, message: 'Hard redeploy', pusher: undefined, forceInstall: true });
      // The minimal body of the reference's manual tests: deploy the head.
      assert.deepEqual(interpret('github', 'push', { ref: 'refs/heads/main' }, 'main'), { action: 'deploy', commit: null, message: undefined, pusher: undefined });
    });

    it('deploys only published releases whose target is the tracked branch', () => {
      const published = githubExample('release', (e) => e.action === 'published');
      const d = interpret('github', 'release', published, 'master');
      assert.equal(d.action, 'deploy');
      assert.equal(d.action === 'deploy' && d.tag, published.release.tag_name);
      assert.equal(d.action === 'deploy' && d.commit, null);
      assert.match((interpret('github', 'release', published, 'main') as any).reason, /targets master; this service deploys branch main/);
      for (const action of ['created', 'prereleased', 'released', 'edited', 'deleted']) {
        const e = githubExample('release', (x) => x.action === action);
        assert.match((interpret('github', 'release', e, 'master') as any).reason, new RegExp(`release ${action}: only published`));
      }
    });

    it('answers ping and unhandled events with a reason, deploying nothing', () => {
      const ping = githubExample('ping');
      assert.match((interpret('github', 'ping', ping, 'main') as any).reason, /^ping received/);
      assert.match((interpret('github', 'issues', {}, 'main') as any).reason, /GitHub event issues is not handled/);
    });

    it('refuses wrongly typed fields as invalid payloads, never as exceptions of another kind', () => {
      const bad: Array<[string, any]> = [
        ['push', {}],
        ['push', { ref: 42 }],
        ['push', { ref: 'refs/heads/main', after: 'not-a-sha' }],
        ['push', { ref: 'refs/heads/main', after: '--upload-pack=touch /tmp/x' }],
        ['push', { ref: 'refs/heads/main', head_commit: 'x' }],
        ['release', { action: 'published', release: { tag_name: '--exec=x' } }],
        ['release', { action: 'published' }],
      ];
      for (const [event, body] of bad) assert.throws(() => interpret('github', event, body, 'main'), InvalidPayload, JSON.stringify(body));
    });
  });

  describe('GitLab and Bitbucket (fixtures)', () => {
    it('GitLab push: checkout_sha of the tracked branch; tag push and deletion ignored', () => {
      const p = fixture('gitlab-push.json');
      assert.deepEqual(interpret('gitlab', 'Push Hook', p, 'main'), { action: 'deploy', commit: p.checkout_sha, message: 'Fix readme', pusher: 'jsmith' });
      assert.match((interpret('gitlab', 'Push Hook', p, 'dev') as any).reason, /push to branch main; this service deploys branch dev/);
      assert.match((interpret('gitlab', 'Tag Push Hook', fixture('gitlab-tag-push.json'), 'main') as any).reason, /^tag push v1.0.0/);
      const del = { ...p, after: ZERO, checkout_sha: null, commits: [], total_commits_count: 0 };
      assert.match((interpret('gitlab', 'Push Hook', del, 'main') as any).reason, /deleted/);
    });

    it('Bitbucket push: the change of the tracked branch; other branches, tags and deletions ignored', () => {
      const p = fixture('bitbucket-push.json');
      const hash = p.push.changes[0].new.target.hash;
      assert.deepEqual(interpret('bitbucket', 'repo:push', p, 'main'), { action: 'deploy', commit: hash, message: 'Add feature', pusher: 'member' });
      assert.match((interpret('bitbucket', 'repo:push', p, 'prod') as any).reason, /no change to branch prod \(pushed: branch main\)/);
      const tag = structuredClone(p);
      tag.push.changes[0].new.type = 'tag';
      assert.match((interpret('bitbucket', 'repo:push', tag, 'main') as any).reason, /pushed: tag main/);
      const del = structuredClone(p);
      Object.assign(del.push.changes[0], { new: null, closed: true });
      assert.match((interpret('bitbucket', 'repo:push', del, 'main') as any).reason, /deleted/);
      // The reference's minimal body: no hash means the branch head.
      assert.deepEqual(interpret('bitbucket', 'repo:push', { push: { changes: [{ new: { name: 'main' } }] } }, 'main'), {
        action: 'deploy', commit: null, message: undefined, pusher: undefined,
      });
    });

    it('Bitbucket Data Center refs_changed: toHash of the branch', () => {
      const p = fixture('bitbucket-server-refs-changed.json');
      assert.equal((interpret('bitbucket', 'repo:refs_changed', p, 'main') as any).commit, p.changes[0].toHash);
    });
  });

  describe('provider detection', () => {
    it('names the provider from the spec headers and the hosts real ones, else from the payload shape', () => {
      assert.deepEqual(providerFromHeaders({ 'x-host-event': 'push' }), { provider: 'github', event: 'push' });
      assert.deepEqual(providerFromHeaders({ 'x-github-event': 'release' }), { provider: 'github', event: 'release' });
      assert.deepEqual(providerFromHeaders({ 'x-gitlab-event': 'Push Hook' }), { provider: 'gitlab', event: 'Push Hook' });
      assert.deepEqual(providerFromHeaders({ 'x-lab-token': 's' }), { provider: 'gitlab', event: '' });
      assert.deepEqual(providerFromHeaders({ 'x-gitlab-token': 's' }), { provider: 'gitlab', event: '' });
      assert.deepEqual(providerFromHeaders({ 'x-event-key': 'repo:push' }), { provider: 'bitbucket', event: 'repo:push' });
      assert.equal(providerFromHeaders({ 'content-type': 'application/json' }), null);
      assert.equal(providerFromShape(fixture('bitbucket-push.json'))?.provider, 'bitbucket');
      assert.equal(providerFromShape(fixture('bitbucket-server-refs-changed.json'))?.provider, 'bitbucket');
      assert.equal(providerFromShape(fixture('gitlab-push.json'))?.provider, 'gitlab');
      assert.equal(providerFromShape(githubExample('push'))?.provider, 'github');
      assert.equal(providerFromShape({ zen: 'x' }), null);
    });

    it('reads JSON and form-encoded bodies (GitHub payload field)', () => {
      const json = JSON.stringify({ ref: 'refs/heads/main' });
      assert.deepEqual(parsePayload(Buffer.from(json), 'application/json'), { ref: 'refs/heads/main' });
      const form = Buffer.from(`payload=${encodeURIComponent(json)}`);
      assert.deepEqual(parsePayload(form, 'application/x-www-form-urlencoded'), { ref: 'refs/heads/main' });
      assert.throws(() => parsePayload(Buffer.from('a=b'), 'application/x-www-form-urlencoded'), /payload field/);
      assert.throws(() => parsePayload(Buffer.from(''), 'application/json'), /empty/);
      assert.throws(() => parsePayload(Buffer.from('{'), 'application/json'), /not valid JSON/);
      assert.throws(() => parsePayload(Buffer.from('[1]'), 'application/json'), /JSON object/);
    });
  });

  describe('signatures', () => {
    it("matches GitHub's documented vector and the reference's", () => {
      const v = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';
      assert.deepEqual(verifyHmac("It's a Secret to Everybody", Buffer.from('Hello, World!'), v), { ok: true });
      const r = 'sha256=b207d041ea2c868d2f0a04f9476df323457b51444dc832111123f3f753cffda5';
      assert.deepEqual(verifyHmac('test-secret', Buffer.from('{"ref":"refs/heads/main"}'), r), { ok: true });
    });

    it('accepts what @octokit/webhooks-methods signs, over the exact bytes', async () => {
      const body = JSON.stringify(githubExample('push'), null, 2);
      const sig = await sign('s3cret', body);
      assert.equal(verify('s3cret', 'github', { 'x-hub-signature-256': sig }, Buffer.from(body)).ok, true);
      // Re-serialised JSON is other bytes: refused.
      assert.equal(verify('s3cret', 'github', { 'x-hub-signature-256': sig }, Buffer.from(JSON.stringify(JSON.parse(body)))).ok, false);
      // Bitbucket signs with the same scheme in X-Hub-Signature.
      assert.equal(verify('s3cret', 'bitbucket', { 'x-hub-signature': sig }, Buffer.from(body)).ok, true);
    });

    it('refuses bad prefixes, lengths, sha1-only and missing headers as plain failures', () => {
      const raw = Buffer.from('{}');
      for (const h of ['', 'sha256=', 'sha256=abc', `sha256=${'g'.repeat(64)}`, `sha512=${'a'.repeat(64)}`, `sha256=${'a'.repeat(66)}`, 'x'.repeat(10000)])
        assert.equal(verify('k', 'github', { 'x-hub-signature-256': h }, raw).ok, false, h);
      assert.match((verify('k', 'github', { 'x-hub-signature': `sha1=${'a'.repeat(40)}` }, raw) as any).reason, /only sha256/);
      assert.match((verify('k', 'github', {}, raw) as any).reason, /missing/);
      assert.match((verify('k', null, {}, raw) as any).reason, /missing/);
    });

    it('GitLab token: equal to the secret, in either header name', () => {
      assert.equal(verifyToken('secret', 'secret').ok, true);
      assert.equal(verifyToken('secret', 'secret2').ok, false);
      assert.equal(verifyToken('secret', '').ok, false);
      assert.equal(verify('secret', null, { 'x-lab-token': 'secret' }, Buffer.from('')).ok, true);
      assert.equal(verify('secret', 'gitlab', { 'x-gitlab-token': 'nope' }, Buffer.from('')).ok, false);
      assert.equal(verify('secret', 'gitlab', {}, Buffer.from('')).ok, false);
    });
  });
});
