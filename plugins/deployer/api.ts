/**
 * The four routes (spec: Endpoints). Answers are plain JSON in the spec's shapes (the manifest turns the
 * envelope off): webhook acknowledgement / `{status:'error', message}`, status, health, build logs, and
 * `{error, message[, hint]}` for the API key and unknown logs.
 */
import crypto from 'node:crypto';
import { reply, type Clock, type HandlerInput, type Log } from '../../core/plugin-api.ts';
import type { DeployerConfig } from './config.ts';
import type { Engine } from './engine.ts';
import { findDeployment, latestOf, logLines, readLog, readLogFile, renderRunning, renderText } from './logs.ts';
import { probe } from './probe.ts';
import { InvalidPayload, deliveryIdOf, interpret, parsePayload, providerFromHeaders, providerFromShape } from './providers.ts';
import type { DeployQueue } from './queue.ts';
import type { RateLimiter } from './ratelimit.ts';
import { verify } from './signature.ts';
import type { StateStore } from './state.ts';
import type { Supervisor } from './supervisor.ts';
import type { UploadGate } from './uploads.ts';

interface Parts {
  cfg: DeployerConfig;
  log: Log;
  clock: Clock;
  store: StateStore;
  engine: Engine;
  queue: DeployQueue;
  supervisor: Supervisor;
  limiter: RateLimiter;
  uploads: UploadGate;
}

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
/** Commit fields are strings in every state (spec): '' while the commit is not known yet. */
const short = (c: string | null | undefined) => (c ? c.slice(0, 7) : '');
const full = (c: string | null | undefined) => c ?? '';
const digest = (s: string) => crypto.createHash('sha256').update(s).digest();

/** Refused before the body was read: close the connection rather than let node drain the unread body. */
const UNREAD = { Connection: 'close' };
/**
 * A refused body up to this size is read and dropped before the answer instead: closing a connection
 * with unread bytes makes the kernel reset it, and a git host still sending its (small) delivery then
 * gets ECONNRESET instead of the 429 or 401 (seen in a test at load 26). Larger bodies are never read.
 */
const DRAIN_MAX = 64 * 1024;
const error = (status: number, message: string, headers?: Record<string, string>) => reply(status, { status: 'error', message }, headers);
const ack = (message: string, delivery_id: string) => reply(200, { status: 'success', message, delivery_id });

export function handlers(p: Parts) {
  const { cfg, log, store, engine, queue, supervisor } = p;

  const queueView = () => ({
    pending: queue.pending
      ? { commit: short(queue.pending.commit), commit_full: full(queue.pending.commit), ...(queue.pending.tag ? { tag: queue.pending.tag } : {}), delivery_id: queue.pending.deliveryId, received_at: new Date(queue.pending.receivedAt).toISOString() }
      : null,
    debouncing: queue.debouncing,
  });

  /**
   * Deliveries refused by the rate limit are not lost: the branch head deploys once the burst is over (a
   * head request in the single pending slot, debounced; it deploys nothing when the head is live already).
   * So after any burst of pushes the newest commit is the one that goes live.
   */
  const catchUp = (waitSeconds: number) => {
    if (queue.pending?.tag || queue.pending?.origin === 'catch-up') return;
    queue.submit({ commit: null, provider: 'catch-up', origin: 'catch-up', deliveryId: `catch-up-${crypto.randomUUID()}`, receivedAt: p.clock.now(), message: `head of ${cfg.branch} after rate-limited deliveries (next window in ${waitSeconds} s)` });
  };

  /**
   * The log of the deployment running now, for `latest` and for its `attempt-<n>` (the page's live tail
   * polls `latest`); null when none runs or the identifier names another deployment.
   */
  const runningLog = (id: string) => {
    const ip = store.state.in_progress;
    if (!engine.active || !ip) return null;
    const m = /^attempt-(\d{1,9})$/i.exec(id);
    if (!/^latest$/i.test(id) && !(m && Number(m[1]) === ip.attempt)) return null;
    const content = readLogFile(engine.logsDir, ip.log_file);
    return content === null ? null : { ...ip, content, stage: engine.active.stage };
  };

  return {
    async webhook({ ip, headers, readBody }: HandlerInput) {
      const declared = Number(first(headers['content-length']));
      const refuse = async (status: number, message: string, extra: Record<string, string> = {}) => {
        if (readBody && Number.isFinite(declared) && declared <= DRAIN_MAX) {
          try {
            await readBody();
            return error(status, message, extra);
          } catch {
            // the body did not come as declared: close as for a large one
          }
        }
        return error(status, message, { ...extra, ...UNREAD });
      };
      // Everything that can be refused from the headers is refused before a byte of the body is read.
      const signed = ['x-hub-signature-256', 'x-hub-signature', 'x-gitlab-token', 'x-lab-token'].some((h) => headers[h] !== undefined);
      if (cfg.signatureVerify && !signed) {
        log.warn({ ip, reason: 'no signature header' }, 'Webhook signature verification failed');
        return refuse(401, 'Webhook signature verification failed: no X-Hub-Signature-256, X-Hub-Signature or X-Gitlab-Token header');
      }
      // With verification on, only authentic deliveries spend the budget (counted below), so forged ones
      // cannot lock the git host out; with it off, every request counts.
      const wait = cfg.signatureVerify ? p.limiter.full(ip) : p.limiter.take(ip);
      if (wait) {
        log.warn({ ip }, 'webhook rate limit exceeded');
        catchUp(wait);
        return refuse(429, `Too Many Requests: over ${cfg.rateLimitPerMinute} webhook requests a minute from this address; retry in ${wait} s (the branch head deploys once the burst is over)`, { 'Retry-After': String(wait) });
      }
      const slot = await p.uploads.acquire(cfg.webhookTimeoutMs);
      if (!slot) {
        log.warn({ ip, reading: p.uploads.active }, 'webhook refused: too many bodies being read');
        return refuse(503, `Service Unavailable: ${p.uploads.active} webhook bodies are being read; retry shortly`, { 'Retry-After': '5' });
      }
      // The slot (and its buffer, which `raw` views) is held until the body has been verified and parsed.
      let body: Record<string, any>;
      let named: ReturnType<typeof providerFromHeaders>;
      let hostDelivery: string | undefined;
      try {
        const raw = readBody ? await readBody(slot.buffer) : Buffer.alloc(0);
        named = providerFromHeaders(headers);
        hostDelivery = deliveryIdOf(headers);
        log.info({ ip, provider: named?.provider, event: named?.event, delivery: hostDelivery, bytes: raw.length }, 'Webhook received');
        if (cfg.signatureVerify) {
          const v = verify(cfg.webhookSecret, named?.provider ?? null, headers, raw);
          if (!v.ok) {
            log.warn({ ip, reason: v.reason }, 'Webhook signature verification failed');
            return error(401, `Webhook signature verification failed: ${v.reason}`);
          }
          p.limiter.count(ip);
        }
        try {
          body = parsePayload(raw, first(headers['content-type']));
        } catch (e) {
          if (e instanceof InvalidPayload) return error(400, `Invalid payload: ${e.message}`);
          throw e;
        }
      } finally {
        slot.release();
      }
      const who = named ?? providerFromShape(body);
      if (!who) return error(400, 'Invalid payload: not a push, release or ping of a known git host (no ref, object_kind or push.changes)');
      let decision;
      try {
        decision = interpret(who.provider, who.event, body, cfg.branch);
      } catch (e) {
        if (e instanceof InvalidPayload) return error(400, `Invalid payload: ${e.message}`);
        throw e;
      }

      const deliveryId = hostDelivery ?? crypto.randomUUID();
      if (hostDelivery) {
        // The last 1000 delivery ids are remembered (across restarts): a redelivery is acknowledged only.
        if (store.state.deliveries.includes(hostDelivery)) return ack(`Delivery ${hostDelivery} was already received; it is not deployed again`, hostDelivery);
        store.state.deliveries.push(hostDelivery);
      }
      if (decision.action === 'ignore') {
        log.info({ delivery: deliveryId, reason: decision.reason }, 'webhook ignored');
        await store.save();
        return ack(`Ignored: ${decision.reason}`, deliveryId);
      }
      queue.submit({
        commit: decision.commit,
        tag: decision.tag,
        message: decision.message,
        pusher: decision.pusher,
        forceInstall: decision.forceInstall,
        provider: who.provider,
        origin: 'webhook',
        deliveryId,
        receivedAt: p.clock.now(),
      });
      log.info({ delivery: deliveryId, commit: decision.commit, tag: decision.tag }, 'deployment queued');
      await store.save();
      return ack('Deployment queued', deliveryId);
    },

    status() {
      const s = store.state;
      const a = engine.active;
      if (a) {
        const elapsed = Math.max(0, (p.clock.now() - a.startedAt) / 1000);
        const timeout = cfg.deploymentTimeoutSeconds;
        return reply(200, {
          status: 'deploying',
          stage: a.stage,
          commit: short(a.commit),
          commit_full: full(a.commit),
          rollback_commit: short(a.rollbackCommit),
          started_at: Math.floor(a.startedAt / 1000),
          duration_seconds: Math.floor(elapsed),
          timeout_seconds: timeout,
          progress_percent: Math.min(100, Math.floor((elapsed / timeout) * 100)),
          // Monitoring scripts of the reference read these; the release being made, its stage and time.
          building_release: { stage: a.stage, elapsed_seconds: Math.floor(elapsed), commit: short(a.commit), commit_full: full(a.commit), release_id: store.state.in_progress?.dir?.split('/').pop() ?? '' },
          queue: queueView(),
        });
      }
      const last = s.history[0];
      return reply(200, {
        status: 'idle',
        current_release: s.current ?? '',
        // Before the first deployment: the same object with empty values and build_status 'none'.
        last_deployment: last
          ? {
              commit: short(last.commit),
              commit_full: full(last.commit),
              updated_at: last.finished_at,
              build_duration_seconds: last.duration_seconds,
              build_status: last.status,
              ...(last.release_id ? { release_id: last.release_id } : { reason: last.reason ?? '', log: `${last.log_file.replace(/\.log$/, '')}` }),
            }
          : { commit: '', commit_full: '', updated_at: '', build_duration_seconds: 0, build_status: 'none' },
        releases: s.releases.map((r) => ({ id: r.id, commit: r.commit, commit_message: r.commit_message, build_duration_seconds: r.build_duration_seconds, deployed_at: r.deployed_at })),
        ...(s.last_failed ? { last_failed_deployment: s.last_failed, failed_commits_count: s.failed_count } : {}),
        queue: queueView(),
      });
    },

    async health() {
      const answers = await probe(cfg.appPort, 2000);
      return reply(200, {
        healthy: answers,
        app_status: answers ? 'running' : 'not_responding',
        app_port: cfg.appPort,
        supervisor_status: supervisor.status,
        deployment_in_progress: engine.active !== null,
        deployment_stage: engine.active?.stage ?? 'none',
      });
    },

    logs({ values }: HandlerInput) {
      const id: string = values.identifier;
      const format: 'text' | 'json' = values.format;
      const tail: number | undefined = values.tail;
      const running = runningLog(id);
      if (running) {
        const lines = logLines(running.content, tail);
        if (format === 'json') return reply(200, { identifier: id, log_file: running.log_file, line_count: lines.length, content: tail === undefined ? running.content : lines.join('\n'), lines });
        return reply(200, renderRunning(running, lines), { 'Content-Type': 'text/plain; charset=utf-8' });
      }
      const d = findDeployment(store.state.history, /^latest$/i.test(id) ? latestOf(store.state.history) : id);
      const content = d ? readLog(engine.logsDir, d) : null;
      if (!d || content === null)
        return reply(404, { error: 'Not Found', message: `No build log found for identifier: ${id}`, hint: 'Use GET /status to see available releases' });
      const lines = logLines(content, tail);
      if (format === 'json')
        return reply(200, { identifier: id, log_file: d.log_file, line_count: lines.length, content: tail === undefined ? content : lines.join('\n'), lines });
      return reply(200, renderText(d, lines), { 'Content-Type': 'text/plain; charset=utf-8' });
    },
  };
}
