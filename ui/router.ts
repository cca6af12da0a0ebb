/**
 * Fragment routing (`/#/node`): the node serves one page at `/`, so every route of the interface lives
 * after the `#` and needs nothing from the server.
 */
import { useEffect, useState } from 'preact/hooks';
import { HOME, PAGES, type PageDef } from './pages.ts';

export interface Match {
  page: PageDef;
  params: Record<string, string>;
}

export function currentPath(): string {
  const h = location.hash.replace(/^#/, '');
  return h.startsWith('/') ? h.split('?')[0] : HOME;
}

export function match(path: string): Match | null {
  const parts = path.split('/').filter(Boolean);
  for (const page of PAGES) {
    const want = page.path.split('/').filter(Boolean);
    if (want.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < want.length && ok; i++) {
      if (want[i].startsWith(':')) {
        try {
          params[want[i].slice(1)] = decodeURIComponent(parts[i]);
        } catch {
          ok = false;
        }
      } else ok = want[i].toLowerCase() === parts[i].toLowerCase();
    }
    if (ok) return { page, params };
  }
  return null;
}

export function navigate(path: string) {
  location.hash = `#${path}`;
}

export function usePath(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const on = () => setPath(currentPath());
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return path;
}
