/**
 * Identity: wallet login (a server-issued phrase signed by a bitcoin-style or ethereum key), sessions the
 * host resolves per request from a memory cache, and the app-owner lookup of the appowner levels.
 */
import { VERSION, configSchema, coreServices, definePlugin } from '../../core/plugin-api.ts';
import { identityService } from './api.ts';
import { AppOwners } from './appowners.ts';
import { canonicalId } from './ids.ts';
import { makeHandlers } from './handlers.ts';
import { Logins } from './login.ts';
import { PhraseBook } from './phrases.ts';
import { SessionBook } from './sessions.ts';
import { SignBook } from './signs.ts';
import { LoginSockets } from './sockets.ts';
import { verifierBackend, verifySignature } from './verify.ts';

export interface IdentityConfig {
  sessionTtlHours: number;
  maxSessions: number;
  maxSessionsPerId: number;
  maxActivePhrases: number;
  phrasesPerAddress: number;
  maxUsedPhrases: number;
  wsTimeoutSeconds: number;
  maxSocketsPerAddress: number;
  maxSockets: number;
  purgeIntervalSeconds: number;
}

/** Keys of earlier versions, still accepted so an existing config file starts; they do nothing now. */
const RETIRED = {
  maxCachedSessions: { type: 'integer', deprecated: true, description: 'retired: every live session is held in memory, bounded by maxSessions' },
  maxSocketsPerPhrase: { type: 'integer', deprecated: true, description: 'retired: one socket per phrase (the first one opened)' },
};

export default definePlugin({
  id: 'identity',
  version: VERSION,
  deps: { store: coreServices.store, clock: coreServices.clock, auth: coreServices.auth, health: coreServices.health, log: coreServices.log },
  provides: { identity: identityService },
  configSchema: configSchema<IdentityConfig>({
    type: 'object',
    properties: {
      // The spec: a session lasts up to 14 days.
      sessionTtlHours: { type: 'integer', minimum: 1, maximum: 336, default: 336 },
      maxSessions: { type: 'integer', minimum: 10, default: 10000 },
      maxSessionsPerId: { type: 'integer', minimum: 1, default: 100 },
      // Issued phrases listed by activeloginphrases (a record only: phrases prove themselves).
      maxActivePhrases: { type: 'integer', minimum: 100, default: 20000 },
      phrasesPerAddress: { type: 'integer', minimum: 1, default: 60 },
      maxUsedPhrases: { type: 'integer', minimum: 100, default: 100000 },
      // A login socket waits at most this long, and never past its phrase's 15 minutes.
      wsTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 900, default: 900 },
      maxSocketsPerAddress: { type: 'integer', minimum: 1, default: 16 },
      maxSockets: { type: 'integer', minimum: 1, default: 4000 },
      purgeIntervalSeconds: { type: 'integer', minimum: 1, default: 60 },
      ...RETIRED,
    },
    additionalProperties: false,
  }),
  async setup(ctx) {
    const cfg = ctx.config;
    const phrases = new PhraseBook(ctx.store('phrases'), ctx.store('state'), ctx.clock, {
      listed: cfg.maxActivePhrases,
      perAddress: cfg.phrasesPerAddress,
      maxUsed: cfg.maxUsedPhrases,
    });
    const sessions = new SessionBook(ctx.store('sessions'), ctx.clock, {
      max: cfg.maxSessions,
      perId: cfg.maxSessionsPerId,
      privileged: (id) => ctx.auth.isOperator(id) || ctx.auth.isCoreTeam(id),
    });
    const owners = new AppOwners(ctx.store('appowners'));
    const signs = new SignBook(ctx.store('signatures'), ctx.clock);
    await Promise.all([phrases.init(), sessions.init(), owners.init(), signs.init()]);

    const sockets = new LoginSockets({ perAddress: cfg.maxSocketsPerAddress, total: cfg.maxSockets }, () => ctx.clock.now());
    const logins = new Logins({ phrases, sessions, sockets, auth: ctx.auth, clock: ctx.clock, sessionTtlMs: cfg.sessionTtlHours * 3600_000 });

    // The header's id in its one spelling: an ethereum wallet is one identity in any letter case.
    const dropResolver = ctx.auth.useSessionResolver((h) => sessions.resolve({ ...h, legacyid: canonicalId(h.legacyid) }));
    // An apps plugin that keeps its own registry replaces this lookup.
    const dropOwners = ctx.auth.useAppOwnerLookup((app) => owners.get(app));

    // One purge at a time; each removes in small batches, so requests are served while it runs.
    let purging: Promise<void> | null = null;
    const purge = () =>
      (purging ??= (async () => {
        try {
          sockets.sweep();
          await phrases.purge();
          await sessions.purge();
          await signs.purge();
        } catch (err) {
          ctx.log.warn({ err }, 'purging expired phrases and sessions failed; retrying at the next interval');
        } finally {
          purging = null;
        }
      })());
    const timer = setInterval(() => void purge(), cfg.purgeIntervalSeconds * 1000);
    timer.unref();
    if (verifierBackend !== 'native')
      ctx.log.warn('secp256k1 native binding not built: login signatures are checked in pure JS (about 20x slower); run `npm rebuild secp256k1`');

    const handlers = makeHandlers({
      ctx,
      phrases,
      sessions,
      sockets,
      logins,
      signs,
      wsTimeoutMs: cfg.wsTimeoutSeconds * 1000,
      phrasesPerAddress: cfg.phrasesPerAddress,
    });
    return {
      handlers,
      services: { identity: { verifySignature, appOwners: owners } },
      dispose: async () => {
        clearInterval(timer);
        dropResolver();
        dropOwners();
        sockets.closeAll();
        await purging;
      },
    };
  },
});
