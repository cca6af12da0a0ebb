/**
 * Which volume a request names: the app (`app` or `component_app`) and component, looked up by exact name
 * in what the apps plugin installed here (never a pattern, never a path from the request), and only while
 * the volume is mounted (the folder of an unmounted volume is the host's own disk).
 */
import { ApiError } from '../../core/plugin-api.ts';
import type { AppComponentView, AppsService, InstalledAppView } from '../apps/api.ts';
import { parseRelPath, PathRefused, Root } from './safe-path.ts';

/** The node's own folder at each volume root (restore and extraction staging); no route reaches it. */
export const STAGING = '.corenode-staging';
/** Backups beside the data: `<volume>/backup/<type>/backup_<component>.tar.gz`. */
export const BACKUP_DIR = 'backup';
export const BACKUP_TYPES = ['local', 'upload', 'remote'] as const;
export type BackupType = (typeof BACKUP_TYPES)[number];

export interface VolumeTarget {
  app: InstalledAppView;
  component: AppComponentView;
  root: Root;
}

export function splitName(appname: string, component?: string): { app: string; component?: string } {
  const i = appname.indexOf('_');
  if (i < 0) return { app: appname, component };
  const named = appname.slice(0, i);
  if (component && component !== named) throw ApiError.badRequest(`appname names component ${named}, component names ${component}`);
  return { app: appname.slice(i + 1), component: named };
}

export async function volumeOf(apps: AppsService, appname: string, componentName?: string): Promise<VolumeTarget> {
  const { app: name, component: comp } = splitName(appname, componentName);
  const app = await apps.installed(name);
  if (!app) throw new ApiError(404, 'NotFound', `Application ${name} is not installed on this node`);
  let component: AppComponentView | undefined;
  if (comp) component = app.components.find((c) => c.name === comp);
  else if (app.components.length === 1) component = app.components[0];
  else throw ApiError.badRequest(`${name} has components ${app.components.map((c) => c.name).join(', ')}: name one`);
  if (!component) throw new ApiError(404, 'NotFound', `${name} has no component ${comp}`);
  if (!component.mounted) throw new ApiError(503, 'VolumeUnavailable', `The volume of ${component.name} is not mounted`);
  return { app, component, root: new Root(component.mountpoint) };
}

/** A browser path: the rules of safe-path.ts, and never the node's staging folder. */
export function volumePath(value: unknown, what: string, opts: { allowRoot?: boolean } = {}): string[] {
  const parts = parseRelPath(value, what, opts);
  if (parts[0] === STAGING) throw new PathRefused(`${what}: ${STAGING} is the node's own folder`);
  return parts;
}

/**
 * Refuse a file operation that would move, rename, remove or replace a mount root of the component (`appdata`
 * and the `m:`/`f:` names, the apps service's `mountRoots`): Docker follows a link put in their place when it
 * starts the container (plugins/apps/bind-check.ts). Every operation that changes an entry at a path passes
 * that path here; reading, listing and what happens inside these folders stay open.
 */
export function keepMountRoots(t: VolumeTarget, parts: string[], what: string): void {
  if (parts.length === 1 && t.component.mountRoots.includes(parts[0]))
    throw new PathRefused(`${what}: ${parts[0]} is mounted into the app's containers; it cannot be moved, renamed, removed or replaced`);
}

export const backupFileName = (component: string) => `backup_${component}.tar.gz`;

/** `<type>/backup_<component>.tar.gz`, the only form a backup file is named by. */
export function parseBackupRef(filepath: string): { type: BackupType; component: string } {
  const m = /^(local|upload|remote)\/backup_([a-zA-Z0-9]{1,64})\.tar\.gz$/.exec(filepath);
  if (!m) throw new PathRefused('filepath must be <local|upload|remote>/backup_<component>.tar.gz');
  return { type: m[1] as BackupType, component: m[2] };
}
