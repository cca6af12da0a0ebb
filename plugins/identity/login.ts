/**
 * The login: the phrase's checks (issued here, not expired, not used; an emergency phrase only for the
 * operator and the core team), the claim, the one signature check, the session, and the push to the
 * waiting websocket. The body's form is the manifest's to check. Every refusal is an ApiError a person can
 * act on.
 */
import { ApiError, type Auth, type Clock } from '../../core/plugin-api.ts';
import { canonicalId, idKind } from './ids.ts';
import { phraseTime, type PhraseBook, type PhraseState } from './phrases.ts';
import { digestOf, type SessionBook } from './sessions.ts';
import type { LoginSockets } from './sockets.ts';
import { verifySignature } from './verify.ts';

export interface LoginInput {
  legacyid: string;
  loginPhrase: string;
  signature: string;
}

export interface LoginResult {
  message: string;
  legacyid: string;
  loginPhrase: string;
  signature: string;
  privilege: 'admin' | 'coreteam' | 'user';
  createdAt: string;
  expireAt: string;
}

const bad = (name: string, message: string) => new ApiError(400, name, message);
const denied = (name: string, message: string) => new ApiError(401, name, message);

export const EXPIRED = 'Signed message is no longer valid. Please request a new one.';
export const UNKNOWN = 'This login phrase was not issued by this node. Please request a new one with GET /id/loginphrase.';
export const USED = 'This login phrase was already used to log in. Please request a new one.';

/**
 * The login fields of a body the manifest's `loginBody` schema already checked (each field's presence and
 * form: an id of the P2PKH or ethereum shape, a phrase of 13 digits and [0-9a-z], a signature string), with
 * the reference's aliases (`address`, `zelid`; `message`) merged. What a schema cannot say stays here: the
 * P2PKH checksum. The id comes out in its one spelling (`canonicalId`).
 */
export function readLoginInput(body: Record<string, unknown>): LoginInput {
  const legacyid = String(body.legacyid ?? body.zelid ?? body.address);
  if (!idKind(legacyid))
    throw bad('InvalidId', `Core ID is not valid: ${legacyid} has the form of a P2PKH address but its checksum does not match (a typing error?)`);
  return { legacyid: canonicalId(legacyid), loginPhrase: String(body.loginPhrase ?? body.message), signature: String(body.signature) };
}

export class Logins {
  constructor(
    private readonly deps: { phrases: PhraseBook; sessions: SessionBook; sockets: LoginSockets; auth: Auth; clock: Clock; sessionTtlMs: number },
  ) {}

  /** The phrase's state when it can be used to log in or to wait on (used or not); else the refusal. */
  phraseState(loginPhrase: string): PhraseState | ApiError {
    const now = this.deps.clock.now();
    const t = phraseTime(loginPhrase);
    if (t > now + 60_000) return denied('UnknownPhrase', UNKNOWN); // dated in the future: not one of ours
    const rec = this.deps.phrases.get(loginPhrase);
    if (!rec) return denied('UnknownPhrase', UNKNOWN);
    if (rec.expireAt <= now) return denied('ExpiredPhrase', EXPIRED);
    return rec;
  }

  async login(input: LoginInput): Promise<LoginResult> {
    const { phrases, sessions, sockets, auth, clock } = this.deps;
    const { legacyid, loginPhrase, signature } = input;
    const rec = this.phraseState(loginPhrase);
    if (rec instanceof ApiError) throw rec;
    if (rec.emergency && !auth.isOperator(legacyid) && !auth.isCoreTeam(legacyid))
      throw denied('EmergencyPhrase', 'An emergency login phrase is only for the node operator and the core team; others log in with GET /id/loginphrase');
    const sigDigest = digestOf(signature);
    let session;
    const retry = rec.used;
    if (retry) {
      // The same wallet sending the same login again (a retry after a lost answer) gets the same session.
      session = await sessions.find(loginPhrase);
      if (!session || session.legacyid !== legacyid || session.sigDigest !== sigDigest) throw denied('UsedPhrase', USED);
    } else {
      if (!verifySignature(loginPhrase, legacyid, signature))
        throw denied('InvalidSignature', `Invalid signature: it is not a signature of this login phrase by ${legacyid}. Sign the exact phrase with the key of that address.`);
      if (!phrases.claim(loginPhrase)) return this.login(input); // another login claimed it meanwhile: decide again
      const now = clock.now();
      const created = { legacyid, loginPhrase, sigDigest, createdAt: now, expireAt: now + this.deps.sessionTtlMs };
      [, session] = await Promise.all([phrases.persistClaim(loginPhrase), sessions.create(created, signature)]);
    }
    const result: LoginResult = {
      message: 'Successfully logged in',
      legacyid,
      loginPhrase,
      signature,
      privilege: auth.privilegeOf(legacyid),
      createdAt: new Date(session.createdAt).toISOString(),
      expireAt: new Date(session.expireAt).toISOString(),
    };
    if (!retry) sockets.push(loginPhrase, { status: 'success', data: result });
    return result;
  }
}
