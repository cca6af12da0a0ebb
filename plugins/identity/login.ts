/**
 * The login: input checks in the reference's order and words, the phrase claim, the one signature check,
 * the session, and the push to waiting websockets. Every refusal is an ApiError a person can act on.
 */
import { ApiError, type Auth, type Clock } from '../../core/plugin-api.ts';
import { idKind } from './ids.ts';
import { PHRASE_FORM, PHRASE_TTL_MS, phraseTime, type PhraseBook } from './phrases.ts';
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
export const UNKNOWN = 'This login phrase was not issued by this node, or it has expired and was removed. Please request a new one.';
export const USED = 'This login phrase was already used to log in. Please request a new one.';

/** Read the login fields (the reference's aliases too) and check their form; no store, no crypto. */
export function readLoginInput(body: unknown): LoginInput {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw bad('InvalidBody', 'The body must be a JSON object with legacyid, loginPhrase and signature');
  const b = body as Record<string, unknown>;
  const legacyid = b.legacyid ?? b.zelid ?? b.address;
  const loginPhrase = b.loginPhrase ?? b.message;
  const signature = b.signature;
  if (legacyid === undefined || legacyid === '') throw bad('MissingId', 'No Core ID is specified');
  if (!idKind(legacyid))
    throw bad('InvalidId', 'Core ID is not valid: use a P2PKH address (starting with 1, 26 to 35 characters) or an ethereum address (0x and 40 hex digits)');
  if (loginPhrase === undefined || loginPhrase === '') throw bad('MissingPhrase', 'No message is specified');
  if (typeof loginPhrase !== 'string' || !PHRASE_FORM.test(loginPhrase))
    throw bad('InvalidPhrase', 'Signed message is not valid: a login phrase is 40 to 70 characters, 13 digits then lowercase letters and digits, from GET /id/loginphrase');
  if (signature === undefined || signature === '') throw bad('MissingSignature', 'No signature is specified');
  if (typeof signature !== 'string') throw denied('InvalidSignature', 'Invalid signature: it must be a string (base64 for P2PKH ids, 0x-hex for ethereum ids)');
  return { legacyid: legacyid as string, loginPhrase, signature };
}

export class Logins {
  constructor(
    private readonly deps: { phrases: PhraseBook; sessions: SessionBook; sockets: LoginSockets; auth: Auth; clock: Clock; sessionTtlMs: number },
  ) {}

  /** Why a phrase cannot be used to log in or to wait on, or null when it can. */
  phraseRefusal(loginPhrase: string): ApiError | null {
    const now = this.deps.clock.now();
    const rec = this.deps.phrases.get(loginPhrase);
    const t = phraseTime(loginPhrase);
    if (t > now + 60_000) return denied('UnknownPhrase', UNKNOWN); // dated in the future: not one of ours
    if (now - t > PHRASE_TTL_MS || (rec && rec.expireAt <= now)) return denied('ExpiredPhrase', EXPIRED);
    if (!rec) return denied('UnknownPhrase', UNKNOWN);
    return null;
  }

  async login(input: LoginInput): Promise<LoginResult> {
    const { phrases, sessions, sockets, auth, clock } = this.deps;
    const { legacyid, loginPhrase, signature } = input;
    const refusal = this.phraseRefusal(loginPhrase);
    if (refusal) throw refusal;
    const rec = phrases.get(loginPhrase)!;
    if (rec.emergency && !auth.isOperator(legacyid) && !auth.isCoreTeam(legacyid))
      throw denied('EmergencyPhrase', 'An emergency login phrase is only for the node operator and the core team; others log in with GET /id/loginphrase');
    const sigDigest = digestOf(signature);
    let session;
    const retry = rec.usedAt !== undefined;
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
