/** The route handlers of manifests/identity.yaml. */
import { ApiError, websocket, type Auth, type Clock, type Collection, type HandlerInput, type Health } from '../../core/plugin-api.ts';
import { EXPIRED, Logins, USED, readLoginInput } from './login.ts';
import { PHRASE_FORM, type PhraseBook, type PhraseRecord } from './phrases.ts';
import type { SessionBook, SessionRecord } from './sessions.ts';
import { LoginSockets, errorEnvelope } from './sockets.ts';

export interface SignRecord {
  _id?: string;
  signature: string;
  identifier: string;
  loginPhrase: string;
  createdAt: number;
  expiredAt: number;
}

export interface HandlerDeps {
  health: Health;
  auth: Auth;
  clock: Clock;
  phrases: PhraseBook;
  sessions: SessionBook;
  sockets: LoginSockets;
  logins: Logins;
  signs: Collection<SignRecord>;
  wsTimeoutMs: number;
}

const iso = (ms: number) => new Date(ms).toISOString();
const sessionView = (s: SessionRecord) => ({ legacyid: s.legacyid, loginPhrase: s.loginPhrase, createdAt: iso(s.createdAt), expireAt: iso(s.expireAt) });
const phraseView = (p: PhraseRecord) => ({ loginPhrase: p.loginPhrase, createdAt: iso(p.createdAt), expireAt: iso(p.expireAt), used: p.usedAt !== undefined, emergency: !!p.emergency });

export function makeHandlers(d: HandlerDeps) {
  const { phrases, sessions, sockets, logins, clock, auth } = d;

  // Concurrent phrase requests share one run of the checks that gate login (not the report-only ones).
  let checking: ReturnType<Health['run']> | null = null;
  const health = () => (checking ??= d.health.run({ requiredOnly: true }).finally(() => (checking = null)));

  return {
    loginphrase: async () => {
      const h = await health();
      if (!h.healthy) {
        const failing = h.checks.filter((c) => !c.ok && c.required).map((c) => (c.message ? `${c.name} (${c.message})` : c.name));
        throw new ApiError(
          503,
          'NodeUnfit',
          `This node fails its fitness checks: ${failing.join('; ')}. Login phrases are refused until it recovers (see GET /core/health); the operator can log in with GET /id/emergencyphrase.`,
        );
      }
      return (await phrases.issue()).loginPhrase;
    },

    emergencyphrase: async () => (await phrases.issue(true)).loginPhrase,

    verifylogin: ({ body }: HandlerInput) => logins.login(readLoginInput(body)),

    // A wallet on another device hands over its signature: verified and logged in like verifylogin (the
    // page waiting on /ws/id/<phrase> gets the login), and the record is kept for 15 minutes.
    providesign: async ({ body }: HandlerInput) => {
      const input = readLoginInput(body);
      await logins.login(input);
      const now = clock.now();
      const rec = await d.signs.insert({ signature: input.signature, identifier: input.legacyid, loginPhrase: input.loginPhrase, createdAt: now, expiredAt: now + 15 * 60_000 });
      return { signature: rec.signature, identifier: rec.identifier, createdAt: iso(rec.createdAt), expiredAt: iso(rec.expiredAt), _id: rec._id };
    },

    loggedsessions: async ({ caller }: HandlerInput) => (await sessions.list(caller.legacyid!)).map(sessionView),

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
      const s = await sessions.find(body.loginPhrase);
      if (!s || (s.legacyid !== caller.legacyid && !caller.isAdmin))
        throw new ApiError(404, 'NotFound', 'No session of yours is logged in with this login phrase (it was already logged out, it expired, or it belongs to another id)');
      await sessions.removePhrase(s.loginPhrase);
      return { message: 'Session successfully logged out' };
    },

    loggedusers: async () => (await sessions.list()).map(sessionView),

    activeloginphrases: () => phrases.active().map(phraseView),

    logoutallusers: async () => {
      await sessions.removeAll();
      return { message: 'Successfully logged out all users' };
    },

    // The caller's level: from the legacyidauth header, or from a body {legacyid, loginPhrase, signature}.
    checkprivilege: async ({ body, caller }: HandlerInput) => {
      const b = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
      let level: string = caller.privilege;
      if (b.legacyid !== undefined || b.loginPhrase !== undefined || b.signature !== undefined) {
        if (typeof b.legacyid !== 'string' || !b.legacyid) throw new ApiError(400, 'MissingId', 'No user Core ID specified');
        if (typeof b.loginPhrase !== 'string' || !b.loginPhrase) throw new ApiError(400, 'MissingPhrase', 'No user loginPhrase specified');
        if (typeof b.signature !== 'string' || !b.signature) throw new ApiError(400, 'MissingSignature', 'No user Core ID signature specified');
        const s = await sessions.resolve({ legacyid: b.legacyid, loginPhrase: b.loginPhrase, signature: b.signature });
        level = s ? auth.callerFor(s).privilege : 'none';
      }
      return { message: level, privilege: level };
    },

    wsLogin: websocket(({ params }, socket) => {
      const phrase = String(params.loginPhrase ?? '');
      const refusal = PHRASE_FORM.test(phrase)
        ? logins.phraseRefusal(phrase)
        : new ApiError(400, 'InvalidPhrase', 'Signed message is not valid: this is not a login phrase from GET /id/loginphrase');
      if (refusal) return LoginSockets.finish(socket, errorEnvelope(refusal.code as number, refusal.name, refusal.message));
      const rec = phrases.get(phrase)!;
      if (rec.usedAt !== undefined) return LoginSockets.finish(socket, errorEnvelope(401, 'UsedPhrase', USED));
      const timeout = Math.min(d.wsTimeoutMs, rec.expireAt - clock.now());
      sockets.add(phrase, socket, timeout, errorEnvelope(401, 'ExpiredPhrase', EXPIRED));
    }),
  };
}
