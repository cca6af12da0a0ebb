/**
 * The page registry: every page of the interface, its fragment route (`#/node`, `#/apps/manage/:name`),
 * its nav entry and the level it needs. To add a page: write `pages/<name>.tsx` (default export a
 * component taking PageProps) and add one line here. Pages load on first visit (a chunk of their own), so
 * a large page (charts, a terminal) does not weigh on the first one.
 */
import type { ComponentType } from 'preact';
import type { Level } from './session.ts';

export interface PageProps {
  /** The route's `:name` parameters, decoded. */
  params: Record<string, string>;
}

export interface PageDef {
  /** Fragment route; `:x` segments become params. */
  path: string;
  title: string;
  /** The level a caller needs to see the page at all; the nav leaves out what the session lacks. */
  level: Level;
  /** False: routed but not in the nav (login, a page reached from another). */
  nav?: boolean;
  load: () => Promise<{ default: ComponentType<PageProps> }>;
}

export const PAGES: PageDef[] = [
  { path: '/node', title: 'Node', level: 'public', load: () => import('./pages/node.tsx') },
  { path: '/network', title: 'Network', level: 'public', load: () => import('./pages/network.tsx') },
  { path: '/apps', title: 'Apps', level: 'public', load: () => import('./pages/apps.tsx') },
  { path: '/apps/manage/:name', title: 'App', level: 'public', nav: false, load: () => import('./pages/app.tsx') },
  { path: '/explorer', title: 'Explorer', level: 'public', load: () => import('./pages/explorer.tsx') },
  { path: '/login', title: 'Log in', level: 'public', nav: false, load: () => import('./pages/login.tsx') },
];

export const HOME = '/node';
