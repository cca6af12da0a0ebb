/**
 * Identity: wallet login (a server-issued phrase signed by a bitcoin-style or ethereum key), sessions the
 * host resolves per request from a memory cache, and the app-owner lookup of the appowner levels.
 */
import { VERSION, configSchema, coreServices, definePlugin, type Collection } from '../../core/plugin-api.ts';
import { AppOwners } from './appowners.ts';
import { makeHandlers, type SignRecord } from './handlers.ts';
import { Logins } from './login.ts';
import { PhraseBook } from './phrases.ts';
import { SessionBook } from './sessions.ts';
import { LoginSockets } from './sockets.ts';
import { verifierBackend } from './verify.ts';

export interface IdentityConfig {
  sessionTtlHours: number;
  maxActivePhrases: number;
  maxCachedSessions: number;
  wsTimeoutSeconds: number;
  maxSocketsPerPhrase: number;
  maxSockets: number;
  purgeIntervalSeconds: number;
}

export default definePlugin({
  id: 'identity',
  version: VERSION,
  deps: { store: coreServices.store, clock: coreServices.clock, auth: coreServices.auth, health: coreServices.health, log: coreServices.log },
  configSchema: configSchema<IdentityConfig>({
    type: 'object',
    properties: {
      // The spec: a session lasts up to 14 days.
      sessionTtlHours: { type: 'integer', minimum: 1, maximum: 336, default: 336 },
      maxActivePhrases: { type: 'integer', minimum: 100, default: 20000 },
      maxCachedSessions: { type: 'integer', minimum: 100, default: 100000 },
      // A login socket waits at most this long, and never past its phrase's 15 minutes.
      wsTimeoutSeconds: { type: 'integer', minimum: 1, maximum: 900, default: 900 },
      maxSocketsPerPhrase: { type: 'integer', minimum: 1, default: 8 },
      maxSockets: { type: 'integer', minimum: 1, default: 2000 },
      purgeIntervalSeconds: { type: 'integer', minimum: 1, default: 60 },
    },
    additionalProperties: false,
  }),
  async setup(ctx) {
    const cfg = ctx.config;
    const phrases = new PhraseBook(ctx.store('phrases'), ctx.clock, cfg.maxActivePhrases);
    const sessions = new SessionBook(ctx.store('sessions'), ctx.clock, cfg.maxCachedSessions);
    const owners = new AppOwners(ctx.store('appowners'));
    const signs = ctx.store('signatures') as Collection<SignRecord>;
    await Promise.all([phrases.init(), sessions.init(), owners.init(), signs.ensureIndex({ fieldName: 'expiredAt' })]);

    const sockets = new LoginSockets({ perPhrase: cfg.maxSocketsPerPhrase, total: cfg.maxSockets });
    const logins = new Logins({ phrases, sessions, sockets, auth: ctx.auth, clock: ctx.clock, sessionTtlMs: cfg.sessionTtlHours * 3600_000 });

    const dropResolver = ctx.auth.useSessionResolver((h) => sessions.resolve(h));
    // An apps plugin that keeps its own registry replaces this lookup.
    const dropOwners = ctx.auth.useAppOwnerLookup((app) => owners.get(app));

    const purge = async () => {
      try {
        const now = ctx.clock.now();
        await Promise.all([phrases.purge(), sessions.purge(), signs.remove({ expiredAt: { $lte: now } }, { multi: true })]);
      } catch (err) {
        ctx.log.warn({ err }, 'purging expired phrases and sessions failed; retrying at the next interval');
      }
    };
    const timer = setInterval(() => void purge(), cfg.purgeIntervalSeconds * 1000);
    timer.unref();
    if (verifierBackend !== 'native')
      ctx.log.warn('secp256k1 native binding not built: login signatures are checked in pure JS (about 20x slower); run `npm rebuild secp256k1`');

    return {
      handlers: makeHandlers({ health: ctx.health, auth: ctx.auth, clock: ctx.clock, phrases, sessions, sockets, logins, signs, wsTimeoutMs: cfg.wsTimeoutSeconds * 1000 }),
      dispose: () => {
        clearInterval(timer);
        dropResolver();
        dropOwners();
        sockets.closeAll();
      },
    };
  },
});
