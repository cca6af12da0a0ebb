/**
 * The deployer's HTTP surface without deploying: signatures (401), invalid payloads (400), ignored events
 * (200 with the reason), the rate limit (429), the API key on /status and /logs, public /health, and the
 * WEBHOOK_PATH setting. Every answer is checked for the spec's exact body shape.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { sign } from '@octokit/webhooks-methods';
import { Repo, fixture, freePort, githubExample, githubPush, nodeApp, startDeployer, tempDir, testEnv, type TestDeployer } from './support.ts';

const SECRET = 'webhook-secret';
const KEY = 'api-key-1';

describe('deployer webhook and API surface', function () {
  this.timeout(30_000);
  let repo: Repo;
  let d: TestDeployer;
  let head: string;

  before(async () => {
    repo = new Repo();
    head = repo.commit(nodeApp('v1'), 'first');
    // Nothing here may deploy: pushes name another branch (GIT_BRANCH=prod), and the app port is free.
    d = await startDeployer(testEnv(repo, await freePort(), tempDir(), { GIT_BRANCH: 'prod', WEBHOOK_SIGNATURE_VERIFY: 'true', WEBHOOK_SECRET: SECRET, API_KEY: KEY }));
  });
  after(async () => {
    await d?.close();
    repo?.remove();
  });

  // @octokit/webhooks-methods refuses to sign an empty body; that one case is signed here.
  const sig = async (body: string) => (body ? sign(SECRET, body) : `sha256=${crypto.createHmac('sha256', SECRET).digest('hex')}`);
  const signed = async (body: string, headers: Record<string, string> = {}) => d.post('/webhook', body, { 'x-hub-signature-256': await sig(body), ...headers });

  const isError = (r: { json: any }) => {
    assert.deepEqual(Object.keys(r.json).sort(), ['message', 'status']);
    assert.equal(r.json.status, 'error');
  };
  const isAck = (r: { json: any }) => {
    assert.deepEqual(Object.keys(r.json).sort(), ['delivery_id', 'message', 'status']);
    assert.equal(r.json.status, 'success');
  };

  describe('signatures (401)', () => {
    it('accepts a GitHub delivery signed over its exact bytes', async () => {
      const r = await d.github('push', githubPush(repo, head), { secret: SECRET });
      assert.equal(r.status, 200);
      isAck(r);
    });

    it('refuses a missing, wrong, malformed or sha1-only signature with 401, never 500', async () => {
      const body = JSON.stringify(githubPush(repo, head));
      const cases: Array<Record<string, string>> = [
        {},
        { 'x-hub-signature-256': await sign('other-secret', body) },
        { 'x-hub-signature-256': 'sha256=' },
        { 'x-hub-signature-256': 'sha256=zz' },
        { 'x-hub-signature-256': `sha256=${'a'.repeat(63)}` },
        { 'x-hub-signature-256': `md5=${'a'.repeat(64)}` },
        { 'x-hub-signature': `sha1=${'a'.repeat(40)}` },
      ];
      for (const h of cases) {
        const r = await d.post('/webhook', body, { 'x-github-event': 'push', ...h });
        assert.equal(r.status, 401, JSON.stringify(h));
        isError(r);
        assert.match(r.json.message, /^Webhook signature verification failed/);
      }
      // A valid signature of other bytes (the body changed on the way) fails too.
      const r = await d.post('/webhook', body + ' ', { 'x-github-event': 'push', 'x-hub-signature-256': await sign(SECRET, body) });
      assert.equal(r.status, 401);
    });

    it('checks the GitLab token (X-Gitlab-Token or the spec X-Lab-Token) against the secret', async () => {
      const body = JSON.stringify(fixture('gitlab-push.json'));
      for (const name of ['x-gitlab-token', 'x-lab-token']) {
        assert.equal((await d.post('/webhook', body, { 'x-gitlab-event': 'Push Hook', [name]: 'wrong' })).status, 401);
        const ok = await d.post('/webhook', body, { 'x-gitlab-event': 'Push Hook', [name]: SECRET });
        assert.equal(ok.status, 200);
        assert.match(ok.json.message, /^Ignored: push to branch main; this service deploys branch prod/);
      }
      assert.equal((await d.post('/webhook', body, { 'x-gitlab-event': 'Push Hook' })).status, 401);
    });

    it('requires Bitbucket X-Hub-Signature (sha256) while verification is on', async () => {
      const body = JSON.stringify(fixture('bitbucket-push.json'));
      assert.equal((await d.post('/webhook', body, { 'x-event-key': 'repo:push' })).status, 401);
      const ok = await d.post('/webhook', body, { 'x-event-key': 'repo:push', 'x-hub-signature': await sign(SECRET, body) });
      assert.equal(ok.status, 200);
      assert.match(ok.json.message, /no change to branch prod/);
    });

    it('checks a body that names no provider by its signature header (shape detection after)', async () => {
      const body = JSON.stringify({ ref: 'refs/heads/main' });
      assert.equal((await d.post('/webhook', body)).status, 401);
      const r = await signed(body);
      assert.equal(r.status, 200);
      assert.match(r.json.message, /push to branch main/);
    });
  });

  describe('invalid payloads (400)', () => {
    it('answers {status:error, message} for bodies that are not a known push', async () => {
      const bodies = ['', 'not json', '[1,2]', '{"zen":"x"}', '{"ref":42}', '{"ref":"refs/heads/prod","after":"xyz"}', '{"push":{"changes":"x"}}'];
      for (const body of bodies) {
        const r = await signed(body);
        assert.equal(r.status, 400, body);
        isError(r);
        assert.match(r.json.message, /^Invalid payload/);
      }
    });

    it('reads form-encoded GitHub deliveries (JSON in the payload field), signed over the form body', async () => {
      const form = `payload=${encodeURIComponent(JSON.stringify(githubExample('ping')))}`;
      const r = await signed(form, { 'content-type': 'application/x-www-form-urlencoded', 'x-github-event': 'ping' });
      assert.equal(r.status, 200);
      assert.match(r.json.message, /ping received/);
    });

    it('refuses a body over 25 MB with 413 before reading it', async () => {
      const r = await d.post('/webhook', Buffer.alloc(25 * 1024 * 1024 + 1, 32), { 'x-github-event': 'push', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` });
      assert.equal(r.status, 413);
      isError(r);
    });
  });

  describe('ignored events (200, saying why)', () => {
    it('acknowledges ping, other branches, tags, deletions and unpublished releases without deploying', async () => {
      const push = githubPush(repo, head, 'feature');
      const tag = githubExample('push', (e) => e.ref.startsWith('refs/tags/') && !e.deleted);
      const del = { ...githubPush(repo, head, 'prod'), deleted: true, after: '0'.repeat(40), head_commit: null };
      const cases: Array<[string, any, RegExp]> = [
        ['ping', githubExample('ping'), /^Ignored: ping received/],
        ['push', push, /^Ignored: push to branch feature; this service deploys branch prod \(GIT_BRANCH\)/],
        ['push', tag, /^Ignored: tag push simple-tag/],
        ['push', del, /^Ignored: branch prod was deleted/],
        ['release', githubExample('release', (e) => e.action === 'created'), /^Ignored: release created: only published releases deploy/],
        ['issues', { action: 'opened' }, /^Ignored: GitHub event issues is not handled/],
      ];
      for (const [event, payload, reason] of cases) {
        const r = await d.github(event, payload, { secret: SECRET, delivery: `ignored-${event}-${Math.random()}` });
        assert.equal(r.status, 200);
        isAck(r);
        assert.match(r.json.message, reason);
      }
      const s = await d.get('/status', { authorization: `Bearer ${KEY}` });
      assert.equal(s.json.status, 'idle');
      assert.equal(s.json.current_release, '');
      assert.deepEqual(s.json.releases, []);
    });

    it('answers a repeated delivery id once as new, then as already received', async () => {
      const first = await d.github('ping', githubExample('ping'), { secret: SECRET, delivery: 'dup-1' });
      assert.equal(first.json.delivery_id, 'dup-1');
      const again = await d.github('ping', githubExample('ping'), { secret: SECRET, delivery: 'dup-1' });
      assert.equal(again.status, 200);
      assert.match(again.json.message, /already received/);
    });
  });

  describe('API key', () => {
    it('guards /status and /logs (Bearer, Token or X-API-Key); /health stays public', async () => {
      for (const p of ['/status', '/logs/1']) {
        for (const h of [{}, { authorization: 'Bearer wrong' }, { authorization: KEY }, { authorization: `Basic ${KEY}` }] as Array<Record<string, string>>) {
          const r = await d.get(p, h);
          assert.equal(r.status, 401, `${p} ${JSON.stringify(h)}`);
          assert.deepEqual(r.json, { error: 'Unauthorized', message: 'Valid API key required' });
        }
      }
      for (const h of [{ authorization: `Bearer ${KEY}` }, { authorization: `Token ${KEY}` }, { 'x-api-key': KEY }] as Array<Record<string, string>>) assert.equal((await d.get('/status', h)).status, 200);
      const health = await d.get('/health');
      assert.equal(health.status, 200);
      assert.deepEqual(health.json, {
        healthy: false,
        app_status: 'not_responding',
        app_port: d.appPort,
        supervisor_status: 'STOPPED',
        deployment_in_progress: false,
        deployment_stage: 'none',
      });
    });

    it('answers an unknown log with 404 and a hint, a bad tail or format with 400', async () => {
      const auth = { authorization: `Token ${KEY}` };
      for (const id of ['999', '001-' + head, head, head.slice(0, 7), `${head.slice(0, 7)}-FAILED`, 'x', '..%2F..%2Fetc%2Fpasswd']) {
        const r = await d.get(`/logs/${id}`, auth);
        assert.equal(r.status, 404, id);
        assert.deepEqual(r.json, { error: 'Not Found', message: `No build log found for identifier: ${decodeURIComponent(id)}`, hint: 'Use GET /status to see available releases' });
      }
      assert.equal((await d.get('/logs/1?tail=x', auth)).status, 400);
      assert.equal((await d.get('/logs/1?format=xml', auth)).status, 400);
    });
  });

  describe('rate limit and path', () => {
    it('answers 429 with Retry-After over WEBHOOK_RATE_LIMIT requests a minute from one address', async () => {
      const r2 = new Repo();
      r2.commit(nodeApp('v1'));
      const limited = await startDeployer(testEnv(r2, await freePort(), tempDir(), { WEBHOOK_RATE_LIMIT: '3', GIT_BRANCH: 'prod' }));
      try {
        for (let i = 0; i < 3; i++) assert.equal((await limited.github('ping', githubExample('ping'))).status, 200);
        const r = await limited.github('ping', githubExample('ping'));
        assert.equal(r.status, 429);
        isError(r);
        assert.match(r.json.message, /^Too Many Requests/);
        const wait = Number(r.headers.get('retry-after'));
        assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
        // Other routes are not counted.
        assert.equal((await limited.get('/health')).status, 200);
      } finally {
        await limited.close();
        r2.remove();
      }
    });

    it('serves the webhook at WEBHOOK_PATH (and no longer at /webhook); verification off takes unsigned bodies', async () => {
      const r2 = new Repo();
      r2.commit(nodeApp('v1'));
      const custom = await startDeployer(testEnv(r2, await freePort(), tempDir(), { WEBHOOK_PATH: '/hooks/deploy', GIT_BRANCH: 'prod' }));
      try {
        const r = await custom.github('ping', githubExample('ping'), { path: '/hooks/deploy' });
        assert.equal(r.status, 200);
        assert.match(r.json.message, /ping received/);
        assert.equal((await custom.github('ping', githubExample('ping'))).status, 404);
        // No API key configured: /status and /logs are public.
        assert.equal((await custom.get('/status')).status, 200);
        assert.equal((await custom.get('/logs/1')).status, 404);
      } finally {
        await custom.close();
        r2.remove();
      }
    });
  });
});
