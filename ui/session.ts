import { apiBase } from './base.ts';

/**
 * The wallet session of this browser: the `legacyidauth` header value (legacyid, signature, loginPhrase as
 * a query string), the id and the level the node answered at login. Kept in localStorage so a reload stays
 * logged in; the node stays the judge (every call carries the header, and checkprivilege re-reads the level).
 */
export type Privilege = 'none' | 'user' | 'admin' | 'coreteam';

export interface Session {
  legacyid: string;
  loginPhrase: string;
  signature: string;
  header: string;
  privilege: Privilege;
}

const KEY = 'corenode.session';
type Listener = (s: Session | null) => void;
const listeners = new Set<Listener>();

function read(): Session | null {
  try {
    const s = JSON.parse(localStorage.getItem(KEY) ?? 'null');
    return s && typeof s.header === 'string' && typeof s.legacyid === 'string' ? (s as Session) : null;
  } catch {
    return null;
  }
}

let current = read();

function set(s: Session | null) {
  current = s;
  if (s) localStorage.setItem(KEY, JSON.stringify(s));
  else localStorage.removeItem(KEY);
  for (const fn of listeners) fn(s);
}

export const session = {
  get: () => current,
  subscribe(fn: Listener): () => void {
    listeners.add(fn);
    return () => listeners.delete(fn);
  },
  /** From a login answer (verifylogin, or the login websocket's push). */
  start(a: { legacyid: string; loginPhrase: string; signature: string; privilege?: string }) {
    const header = new URLSearchParams({ legacyid: a.legacyid, signature: a.signature, loginPhrase: a.loginPhrase }).toString();
    set({ legacyid: a.legacyid, loginPhrase: a.loginPhrase, signature: a.signature, header, privilege: toPrivilege(a.privilege) });
  },
  end: () => set(null),
  /** Ask the node what the header is worth now; forget the session when it is worth nothing. */
  async check(): Promise<void> {
    const s = current;
    if (!s) return;
    try {
      const res = await fetch(`${apiBase}/id/checkprivilege`, { method: 'POST', headers: { legacyidauth: s.header } });
      const env = await res.json();
      const p = toPrivilege(env?.data?.privilege ?? env?.privilege);
      if (current !== s) return;
      if (p === 'none') set(null);
      else if (p !== s.privilege) set({ ...s, privilege: p });
    } catch {
      // the node is unreachable: keep the session; the next call tells
    }
  },
};

function toPrivilege(p: unknown): Privilege {
  return p === 'admin' || p === 'coreteam' || p === 'user' ? p : 'none';
}

/** The route levels of the manifests, as the host decides them (core/services/auth.ts), for what a page shows. */
export type Level = 'public' | 'user' | 'admin' | 'coreteam' | 'adminandcoreteam';

export function allows(level: Level, p: Privilege): boolean {
  switch (level) {
    case 'public':
      return true;
    case 'user':
      return p !== 'none';
    case 'admin':
      return p === 'admin';
    case 'coreteam':
      return p === 'coreteam';
    case 'adminandcoreteam':
      return p === 'admin' || p === 'coreteam';
  }
}
