/**
 * The host's auth service: resolves the caller from the `legacyidauth` header and decides route levels.
 * Sessions come from a resolver the identity plugin registers; until then every caller is anonymous, so
 * only public routes pass. App ownership comes from a lookup the apps plugin registers.
 */
import type { Auth, AuthHeader, AuthStrategy, Caller, Level, Session } from '../plugin-api.ts';

export type { AuthHeader, Session };

export type SessionResolver = (auth: AuthHeader) => Session | null | Promise<Session | null>;
export type AppOwnerLookup = (appName: string) => string | null | undefined | Promise<string | null | undefined>;

const ETHEREUM = /^0x[0-9a-fA-F]{40}$/;

/** One wallet, however its ethereum id is spelled (checksummed, lower or upper case): hex is case-free. */
export function sameId(a: string, b: string): boolean {
  return a === b || (ETHEREUM.test(a) && ETHEREUM.test(b) && a.toLowerCase() === b.toLowerCase());
}

export const ANONYMOUS: Caller = Object.freeze({ authenticated: false, isAdmin: false, isCoreTeam: false, privilege: 'none' });

export class AuthService implements Auth {
  private sessionResolver: SessionResolver | null = null;
  private ownerLookup: AppOwnerLookup | null = null;
  private readonly strategies = new Map<string, AuthStrategy>();

  constructor(
    private readonly operatorId: () => string,
    private readonly coreTeam: () => readonly string[],
  ) {}

  /** The identity plugin's session lookup; returns the function that removes it again. */
  useSessionResolver(fn: SessionResolver): () => void {
    this.sessionResolver = fn;
    return () => {
      if (this.sessionResolver === fn) this.sessionResolver = null;
    };
  }

  useAppOwnerLookup(fn: AppOwnerLookup): () => void {
    this.ownerLookup = fn;
    return () => {
      if (this.ownerLookup === fn) this.ownerLookup = null;
    };
  }

  useStrategy(name: string, strategy: AuthStrategy): () => void {
    this.strategies.set(name, strategy);
    return () => {
      if (this.strategies.get(name) === strategy) this.strategies.delete(name);
    };
  }

  /** The strategy a route names; undefined while no running plugin registers it (the route refuses). */
  strategy(name: string): AuthStrategy | undefined {
    return this.strategies.get(name);
  }

  /**
   * The header is a URL-encoded query string, never JSON. Decoding turns a raw `+` into a space, so a
   * signature that was not URL-encoded no longer matches the session and the caller stays anonymous.
   */
  parseHeader(value: string | string[] | undefined): AuthHeader | null {
    if (typeof value !== 'string' || value.length === 0 || value.length > 4096) return null;
    const q = new URLSearchParams(value);
    const legacyid = q.get('legacyid') ?? q.get('zelid');
    const signature = q.get('signature');
    const loginPhrase = q.get('loginPhrase');
    if (!legacyid || !signature || !loginPhrase) return null;
    return { legacyid, signature, loginPhrase };
  }

  isOperator(legacyid: string | undefined): boolean {
    const op = this.operatorId();
    return !!legacyid && !!op && sameId(legacyid, op);
  }

  isCoreTeam(legacyid: string | undefined): boolean {
    if (!legacyid) return false;
    return this.coreTeam().some((id) => sameId(id, legacyid));
  }

  /** The login label: core team first, then operator, else user (reference order). */
  privilegeOf(legacyid: string): 'admin' | 'coreteam' | 'user' {
    if (this.isCoreTeam(legacyid)) return 'coreteam';
    if (this.isOperator(legacyid)) return 'admin';
    return 'user';
  }

  async resolve(headerValue: string | string[] | undefined): Promise<Caller> {
    const header = this.parseHeader(headerValue);
    if (!header || !this.sessionResolver) return ANONYMOUS;
    const session = await this.sessionResolver(header);
    if (!session || !sameId(session.legacyid, header.legacyid)) return ANONYMOUS;
    return this.callerFor(session);
  }

  callerFor(session: Session): Caller {
    const isAdmin = this.isOperator(session.legacyid);
    const isCoreTeam = this.isCoreTeam(session.legacyid);
    return {
      legacyid: session.legacyid,
      loginPhrase: session.loginPhrase,
      authenticated: true,
      isAdmin,
      isCoreTeam,
      privilege: isCoreTeam ? 'coreteam' : isAdmin ? 'admin' : 'user',
    };
  }

  /** Whether `caller` may call a route of `level`; `appName` names the application for the app levels. */
  async allows(level: Level, caller: Caller, appName?: string): Promise<boolean> {
    switch (level) {
      case 'public':
        return true;
      case 'user':
        return caller.authenticated;
      case 'admin':
        return caller.isAdmin;
      case 'coreteam':
        return caller.isCoreTeam;
      case 'adminandcoreteam':
        return caller.isAdmin || caller.isCoreTeam;
      case 'appownerabove':
        // Spec: AppOwner or CoreTeam; the operator is not a party to a customer's application.
        if (caller.isCoreTeam) return true;
        return this.ownsApp(caller, appName);
      case 'appowner':
        return this.ownsApp(caller, appName);
    }
  }

  private async ownsApp(caller: Caller, appName: string | undefined): Promise<boolean> {
    if (!caller.authenticated || !appName || !this.ownerLookup) return false;
    // `component_app` names authorise against the app (the part after the first underscore).
    const app = appName.includes('_') ? appName.slice(appName.indexOf('_') + 1) : appName;
    const owner = await this.ownerLookup(app);
    return !!owner && owner === caller.legacyid;
  }
}
