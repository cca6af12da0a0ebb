/** The route handlers of manifests/identity.yaml; their input is checked by the manifest's schemas. */
import { ApiError, websocket, type Auth, type Clock, type HandlerInput, type Health } from '../../core/plugin-api.ts';
import { canonicalId } from './ids.ts';
import { EXPIRED, Logins, USED, readLoginInput } from './login.ts';
import type { PhraseBook, PhraseKind, PhraseRecord } from './phrases.ts';
import type { SessionBook, SessionRecord } from './sessions.ts';
import type { SignBook } from './signs.ts';
import { LoginSockets, errorEnvelope } from './sockets.ts';

export interface HandlerDeps {
  ctx: { health: Health; auth: Auth; clock: Clock };
  phrases: PhraseBook;
  sessions: SessionBook;
  sockets: LoginSockets;
  logins: Logins;
  signs: SignBook;
  wsTimeoutMs: number;
  phrasesPerAddress: number;
}

const iso = (ms: number) => new Date(ms).toISOString();
const sessionView = (s: SessionRecord) => ({ legacyid: s.legacyid, loginPhrase: s.loginPhrase, createdAt: iso(s.createdAt), expireAt: iso(s.expireAt) });
const phraseView = (p: PhraseRecord) => ({ loginPhrase: p.loginPhrase, createdAt: iso(p.createdAt), expireAt: iso(p.expireAt), used: p.usedAt !== undefined, emergency: !!p.emergency });

export function makeHandlers(d: HandlerDeps) {
  const { ctx, phrases, sessions, sockets, logins } = d;

  // Concurrent phrase requests share one run of the checks that gate login (not the report-only ones).
  let checking: ReturnType<Health['run']> | null = null;
  const health = () => (checking ??= ctx.health.run({ requiredOnly: true }).finally(() => (checking = null)));

  const issue = (kind: PhraseKind, ip: string) => {
    const phrase = phrases.issue(kind, ip);
    if (phrase === null)
      throw new ApiError(
        429,
        'TooManyPhrases',
        `Your address was issued ${d.phrasesPerAddress} ${kind} phrases in the last 15 minutes: log in with one of them, or ask again later. Every phrase stays valid for its 15 minutes.`,
      );
    return phrase;
  };

  return {
    loginphrase: async ({ ip }: HandlerInput) => {
      const h = await health();
      if (!h.healthy) {
        const failing = h.checks.filter((c) => !c.ok && c.required).map((c) => (c.message ? `${c.name} (${c.message})` : c.name));
        throw new ApiError(
          503,
          'NodeUnfit',
          `This node fails its fitness checks: ${failing.join('; ')}. Login phrases are refused until it recovers (see GET /core/health); the operator can log in with GET /id/emergencyphrase.`,
        );
      }
      return issue('login', ip);
    },

    emergencyphrase: ({ ip }: HandlerInput) => issue('emergency', ip),

    verifylogin: ({ body }: HandlerInput) => logins.login(readLoginInput(body)),

    // A wallet on another device hands over its signature: verified and logged in like verifylogin (the
    // page waiting on /ws/id/<phrase> gets the login). The same body again is a retry of that login and
    // answers the same record.
    providesign: async ({ body }: HandlerInput) => {
      const input = readLoginInput(body);
      await logins.login(input);
      return d.signs.provide(input.legacyid, input.loginPhrase, input.signature);
    },

    loggedsessions: ({ caller }: HandlerInput) => sessions.list(caller.legacyid!).map(sessionView),

    logoutcurrentsession: async ({ caller }: HandlerInput) => {
      await sessions.removePhrase(caller.loginPhrase!);
      return { message: 'Successfully logged out' };
    },

    logoutallsessions: async ({ caller }: HandlerInput) => {
      await sessions.removeId(caller.legacyid!);
      return { message: 'Successfully logged out all sessions' };
    },

    // A user ends only their own session, even knowing another's phrase; the operator may end any. Both
    // "no such session" and "not yours" answer alike, so the route does not reveal other ids' phrases.
    logoutspecificsession: async ({ body, caller }: HandlerInput<{ loginPhrase: string }>) => {
      const s = sessions.find(body.loginPhrase);
      if (!s || (s.legacyid !== caller.legacyid && !caller.isAdmin))
        throw new ApiError(404, 'NotFound', 'No session of yours is logged in with this login phrase (it was already logged out, it expired, or it belongs to another id)');
      await sessions.removePhrase(s.loginPhrase);
      return { message: 'Session successfully logged out' };
    },

    // Paged by the manifest's query schema: `offset` (default 0), `limit` (default 100, at most 1000).
    loggedusers: ({ query }: HandlerInput) => sessions.list(undefined, query.offset, query.limit).map(sessionView),

    activeloginphrases: () => phrases.active().map(phraseView),

    logoutallusers: async () => {
      await sessions.removeAll();
      return { message: 'Successfully logged out all users' };
    },

    // The caller's level: from the legacyidauth header, or from a body {legacyid, loginPhrase, signature}
    // (the manifest requires all three once one is sent).
    checkprivilege: ({ body, caller }: HandlerInput) => {
      let level: string = caller.privilege;
      if (body?.legacyid !== undefined) {
        const s = sessions.resolve({ legacyid: canonicalId(body.legacyid), loginPhrase: body.loginPhrase, signature: body.signature });
        level = s ? ctx.auth.callerFor(s).privilege : 'none';
      }
      return { message: level, privilege: level };
    },

    // The path's phrase has the phrase form (the manifest's params schema; 400 at the handshake otherwise).
    wsLogin: websocket(({ params, ip }, socket) => {
      const phrase: string = params.loginPhrase;
      const rec = logins.phraseState(phrase);
      if (rec instanceof ApiError) return LoginSockets.finish(socket, errorEnvelope(rec.code as number, rec.name, rec.message));
      if (rec.used) return LoginSockets.finish(socket, errorEnvelope(401, 'UsedPhrase', USED));
      const timeout = Math.min(d.wsTimeoutMs, rec.expireAt - ctx.clock.now());
      sockets.add(phrase, socket, ip, rec.expireAt, timeout, errorEnvelope(401, 'ExpiredPhrase', EXPIRED));
    }),
  };
}
