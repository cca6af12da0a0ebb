/**
 * The frame of every page: a skip link, the header with the nav (only the pages the session's level
 * allows) and the session (id, level, log out), and the routed page, loaded on first visit.
 */
import type { ComponentChildren, ComponentType } from 'preact';
import { useEffect, useErrorBoundary, useState } from 'preact/hooks';
import { call } from './api.ts';
import { PAGES, type PageProps } from './pages.ts';
import { match, navigate, usePath } from './router.ts';
import { allows, session, type Session } from './session.ts';

export function useSession(): Session | null {
  const [s, set] = useState(session.get());
  useEffect(() => session.subscribe(set), []);
  return s;
}

const loaded = new Map<string, ComponentType<PageProps>>();

function SessionBar({ s }: { s: Session | null }) {
  const [busy, setBusy] = useState(false);
  if (!s)
    return (
      <a class="button" href="#/login">
        Log in
      </a>
    );
  async function logout(all: boolean) {
    setBusy(true);
    try {
      await call(all ? '/id/logoutallsessions' : '/id/logoutcurrentsession');
    } catch {
      // gone already: forget it here all the same
    }
    setBusy(false);
    session.end();
  }
  return (
    <div class="session" aria-label="Session">
      <span class="id" title={s.legacyid}>
        {s.legacyid.slice(0, 8)}…
      </span>
      <span class="level" data-level={s.privilege}>
        Level: {s.privilege}
      </span>
      <button type="button" disabled={busy} onClick={() => logout(false)}>
        Log out
      </button>
      <button type="button" disabled={busy} onClick={() => logout(true)}>
        Log out everywhere
      </button>
    </div>
  );
}

/** A page that throws shows why in its place; the frame (nav, session) stays usable. */
function Guard({ children }: { children: ComponentChildren }) {
  const [error, reset] = useErrorBoundary();
  if (!error) return <>{children}</>;
  return (
    <div role="alert" class="card bad">
      <p>This page failed: {String((error as Error).message ?? error)}</p>
      <button type="button" onClick={reset}>
        Try again
      </button>
    </div>
  );
}

export function App() {
  const path = usePath();
  const s = useSession();
  const privilege = s?.privilege ?? 'none';
  const m = match(path);
  const [, rerender] = useState(0);
  useEffect(() => void session.check(), []);
  useEffect(() => {
    if (!m) return;
    document.title = `${m.page.title} · corenode`;
    if (!loaded.has(m.page.path)) m.page.load().then((mod) => (loaded.set(m.page.path, mod.default), rerender((n) => n + 1)));
    // A route change moves the focus to the page's heading region, as a page load would.
    document.getElementById('main')?.focus();
  }, [m?.page.path]);
  const Page = m && loaded.get(m.page.path);
  const allowed = m ? allows(m.page.level, privilege) : false;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header>
        <a class="brand" href="#/node">
          corenode
        </a>
        <nav aria-label="Pages">
          <ul>
            {PAGES.filter((p) => p.nav !== false && allows(p.level, privilege)).map((p) => (
              <li key={p.path}>
                <a href={`#${p.path}`} aria-current={m?.page === p ? 'page' : undefined}>
                  {p.title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <SessionBar s={s} />
      </header>
      <main id="main" tabIndex={-1}>
        {!m ? (
          <>
            <h1>Not found</h1>
            <p>
              No page at this address. <a href="#/node">Go to the node page</a>.
            </p>
          </>
        ) : !allowed ? (
          <>
            <h1>{m.page.title}</h1>
            <p>
              This page needs a session of level {m.page.level}. <button type="button" onClick={() => navigate('/login')}>Log in</button>
            </p>
          </>
        ) : Page ? (
          <Guard key={m.page.path}>
            <Page params={m.params} />
          </Guard>
        ) : (
          <p class="muted">Loading…</p>
        )}
      </main>
    </>
  );
}
